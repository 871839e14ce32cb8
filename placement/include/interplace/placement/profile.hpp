// Measured per-node times of one graph on one device (written by `interplace profile`),
// stored as the small tab-separated text format of docs/profile-format.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace interplace::placement {

// The links between devices, two levels: devices are grouped into nodes of
// `devices_per_node` consecutive devices (device d on node d / devices_per_node); two devices
// of one node talk over the intra-node link (latency_s, bandwidth_bytes_per_s: NVLink,
// shared memory), two devices of different nodes over the inter-node one (the network:
// InfiniBand, TCP). devices_per_node = 0 (the default) puts every device on one node, the
// single link of the model before it had two levels.
// One measured point of a link: a message of `bytes` takes `seconds` one way (the median
// half round trip of an MPI ping-pong).
struct LinkPoint {
  int64_t bytes = 0;
  double seconds = 0.0;
};

struct LinkSpec {
  double latency_s = 0.0;
  double bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  int devices_per_node = 0;
  double inter_node_latency_s = 0.0;
  double inter_node_bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  // The measured curves (ascending bytes; empty: not measured). Where there is one, a
  // message's time is interpolated on it instead of latency + bytes / bandwidth: shared
  // memory moves a 256 KiB message twice as fast per byte as a 64 MiB one (caches), which
  // a line through 1 B and the largest message misses (docs/simulator.md#communication).
  std::vector<LinkPoint> curve = {};
  std::vector<LinkPoint> inter_node_curve = {};
  // The receiving rank's own time per message over the intra-node link (ascending bytes;
  // fewer than 2 points: not measured): buffer, post, and the shared-memory copy, which
  // the receiver's CPU makes. A node-level schedule pays it for every tensor that crosses,
  // which a transfer seen as pure delay hides behind the receiver's compute
  // (docs/simulator.md, "The receiver's share").
  std::vector<LinkPoint> receive_cpu = {};

  bool multi_node() const { return devices_per_node > 0; }
  bool same_node(int device_a, int device_b) const {
    return !multi_node() || device_a / devices_per_node == device_b / devices_per_node;
  }
  // The time of `bytes` between the two devices: on the measured curve of their link, else
  // latency + bytes / bandwidth.
  double transfer_s(int64_t bytes, int from_device, int to_device) const {
    return same_node(from_device, to_device)
               ? time_on(curve, latency_s, bandwidth_bytes_per_s, bytes)
               : time_on(inter_node_curve, inter_node_latency_s, inter_node_bandwidth_bytes_per_s,
                         bytes);
  }
  // The receiver's time for a message of `bytes` from `from_device` (receive_cpu, linear
  // between its points, the first's below them, proportional to bytes beyond them); 0 on
  // one device, between hosts (not measured there) and without a curve.
  double receive_cpu_s(int64_t bytes, int from_device, int to_device) const {
    if (from_device == to_device || receive_cpu.size() < 2 || !same_node(from_device, to_device)) {
      return 0.0;
    }
    const LinkPoint& last = receive_cpu.back();
    if (bytes > last.bytes) {
      return last.seconds * static_cast<double>(bytes) / static_cast<double>(last.bytes);
    }
    return time_on(receive_cpu, 0.0, 1.0, bytes);
  }
  // The part of a transfer that is not the receiver's own time: how long after the send
  // the receiver can take the message. A receiver that waits for it pays both, the
  // transfer's time in all (no less than the receiver's share).
  double in_flight_s(int64_t bytes, int from_device, int to_device) const {
    return std::max(0.0, transfer_s(bytes, from_device, to_device) -
                             receive_cpu_s(bytes, from_device, to_device));
  }
  // Linear between the curve's points; below the first, the first's time; beyond the last,
  // the last's time plus the rest at `bandwidth`. Without a curve (fewer than 2 points),
  // latency + bytes / bandwidth.
  static double time_on(const std::vector<LinkPoint>& curve, double latency_s, double bandwidth,
                        int64_t bytes) {
    if (curve.size() < 2) return latency_s + static_cast<double>(bytes) / bandwidth;
    if (bytes <= curve.front().bytes) return curve.front().seconds;
    if (bytes >= curve.back().bytes) {
      return curve.back().seconds + static_cast<double>(bytes - curve.back().bytes) / bandwidth;
    }
    const auto above =
        std::upper_bound(curve.begin(), curve.end(), bytes,
                         [](int64_t value, const LinkPoint& point) { return value < point.bytes; });
    const LinkPoint& low = *(above - 1);
    const LinkPoint& high = *above;
    const double t =
        static_cast<double>(bytes - low.bytes) / static_cast<double>(high.bytes - low.bytes);
    return low.seconds + t * (high.seconds - low.seconds);
  }
};

struct NodeTiming {
  std::string name;
  double forward_s = 0.0;
  double backward_s = 0.0;
  // A backward for the input gradient alone (kernels::Gradients::inputs_only); NaN when
  // the profile does not have it (written before it was measured).
  double backward_input_s = std::numeric_limits<double>::quiet_NaN();
  // The node's forward and backward inside the runtime's own 1-rank steps (the
  // calibration run; median over its steps): what a pass through the graph pays for the
  // node, cold caches and fresh buffers included, where forward_s/backward_s time it alone
  // and hot. NaN: not measured (older profiles, GPU profiles: the runtime does not wait for
  // each node's kernels).
  double runtime_forward_s = std::numeric_limits<double>::quiet_NaN();
  double runtime_backward_s = std::numeric_limits<double>::quiet_NaN();
};

// How much longer a compute unit takes when several ranks on one host compute at once: they
// share its cores, caches and memory bandwidth (on a GPU node each rank has its own GPU and
// the factors are about 1). factor(P, n) is for P ranks on the host of which n compute while
// the others wait for messages the way the runtime waits; `interplace profile` run with R
// ranks on one host measures P = 2..R (docs/simulator.md, "Ranks sharing a host").
struct HostSharing {
  std::map<int, std::vector<double>> slowdown;  // P -> factors for n = 1..P

  bool empty() const { return slowdown.empty(); }
  bool covers(int ranks_on_host) const { return slowdown.count(ranks_on_host) != 0; }
  // 1 when P = ranks_on_host was not measured, or busy < 1.
  double factor(int ranks_on_host, int busy) const;
};

struct Profile {
  std::string device_name;
  int64_t batch_size = 1;
  LinkSpec link;
  std::vector<NodeTiming> nodes;
  // The measured graph's totals, which other model options (width, image size, sequence
  // length, classes) change while keeping the node names: a cost model refuses a graph
  // whose totals differ. 0: not recorded (profiles written before these keys existed).
  int64_t graph_parameter_count = 0;
  int64_t graph_forward_flops = 0;
  // The runtime's own units for the whole graph on one rank (one micro-batch of
  // batch_size): a forward, a backward pass and an optimiser step, each the median over
  // training steps of `interplace train`'s records. They include what the per-node times
  // miss (the loss, gradient sums at fan-outs, buffers, bookkeeping); the cost model
  // spreads the difference over the nodes (docs/simulator.md, "Calibration"). NaN: not
  // measured (profiles written before the calibration existed).
  double runtime_forward_s = std::numeric_limits<double>::quiet_NaN();
  double runtime_backward_s = std::numeric_limits<double>::quiet_NaN();
  double runtime_optimizer_s = std::numeric_limits<double>::quiet_NaN();
  // The rest of such a step on one rank: the time in no unit (drawing the batch from the
  // data set and slicing it, the runtime's per-step bookkeeping), the median over the same
  // steps. Every rank does it at the start of its step (every rank draws the batch), so the
  // simulators charge it there, scaled to the mini-batch's samples (docs/simulator.md,
  // "The step's overhead"). NaN: not measured (profiles written before it existed).
  double runtime_overhead_s = std::numeric_limits<double>::quiet_NaN();
  // The runtime's units per micro-batch on one rank with M micro-batches in flight (a
  // GPipe step of M micro-batches of batch_size): a pass costs more per micro-batch as
  // the activations kept for backward grow. Keyed by M >= 2 (M = 1 is runtime_forward_s /
  // runtime_backward_s); the cost model scales a rank's node times by the ratio at the
  // rank's working set (docs/simulator.md, "Working set"). Empty: not measured.
  std::map<int, std::pair<double, double>> runtime_in_flight;  // M -> (forward_s, backward_s)
  // Empty: not measured (a profile of one rank, or written before it existed).
  HostSharing host_sharing;
  // Graphs the runtime adds to the model, timed like its nodes: the auxiliary heads of
  // local and interlocking strategies, one per distinct head the model's possible stage
  // boundaries give (key: the head's layers and shapes, runs::aux_head_key), the sums of
  // its layers' forward and backward times. Empty: not measured.
  std::map<std::string, std::pair<double, double>> aux_heads;
};

// Throws invalid_input naming `source` and the line for anything malformed: a missing or
// wrong format line, unknown, repeated or missing keys, bad numbers, negative or
// non-finite times, duplicate node names, a node count that does not match.
Profile read_profile(std::istream& in, std::string_view source = "<stream>");
Profile read_profile_file(const std::filesystem::path& path);

// Throws invalid_input for values the format cannot hold (names with tabs or line breaks,
// non-finite or negative numbers); write_profile_file throws runtime when it cannot write.
void write_profile(std::ostream& out, const Profile& profile);
void write_profile_file(const std::filesystem::path& path, const Profile& profile);

}  // namespace interplace::placement
