// What `interplace profile` measures (docs/profile-format.md): per-node forward and
// backward times of a graph on this process's device, and the MPI link between two ranks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interplace/kernels/tensor.hpp"
#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/run_defaults.hpp"

namespace interplace::runs {

struct NodeTimingOptions {
  int warmup = 2;     // untimed forward+backward pairs per node (primitive creation, caches)
  int repeats = 5;    // timed pairs per node; the median is kept
  uint64_t seed = 1;  // weights and random inputs
  kernels::Device device = kernels::Device::cpu;
  // Time with the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead of the wall
  // clock: on a machine whose cores other processes share, a node's wall time counts the
  // time slices other processes took, its CPU time does not. Only for one CPU thread
  // (other threads' work is not the caller's CPU time): `interplace profile --clock cpu`.
  bool cpu_time = false;
  // Nodes without a kernel layer (a graph file's "opaque" nodes) are not run: their time is
  // estimated as max(FLOPs / the rate the measured nodes achieved, bytes read and written /
  // this bandwidth) for forward and backward alike (docs/your-network.md), and their output
  // is a random tensor of its shape.
  double estimate_bandwidth_bytes_per_s = 15e9;
};

// Times every node of `graph` as its own kernel layer (placement::make_layer) at the
// graph's batch size. Nodes run in id order on the outputs of their producers (so values
// are realistic: token ids stay valid ids, and a tied head is bound to its owner), each
// warmup + repeats times: forward with a fresh context, then backward of a random output
// gradient with the parameter gradients zeroed first; the medians of the timed runs are
// kept. Input nodes cost 0; their tensors are standard normal, or token ids uniform in
// [0, vocabulary) when they feed an embedding.
// Returns one timing per node in id order. Throws invalid_input for repeats < 1 or
// warmup < 0.
std::vector<placement::NodeTiming> time_nodes(const placement::Graph& graph,
                                              const NodeTimingOptions& options);

// Every distinct auxiliary head the graph's possible stage boundaries give
// (distinct_aux_heads) at every head width (study, capped, proportional: a run may ask for
// any of them), at the model's width multiplier; each head's layers timed as time_nodes
// times a graph's nodes; per head key the sums of the forward and of the backward times
// (placement::Profile::aux_heads).
std::map<std::string, std::pair<double, double>> time_aux_heads(const placement::Graph& graph,
                                                                double width_multiplier,
                                                                const NodeTimingOptions& options);

// The runtime's own units for a whole model on one rank: `interplace train` of the graph's
// model at its batch size in one micro-batch, on MPI_COMM_SELF (synthetic data, momentum
// SGD), `warmup` + `steps` steps; the medians over the measured steps of the records'
// forward_s, backward_s and optimizer_s. With the per-node times they calibrate the cost
// model to what the runtime spends beyond the kernels (docs/simulator.md, "Calibration").
struct RuntimeUnits {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double optimizer_s = 0.0;
  double overhead_s = 0.0;  // the step's time in no unit (RankStepRecord::overhead_s)
  // With RuntimeUnitOptions::node_times, by node id, the median over the measured steps of
  // each node's time inside the units (TrainResult::node_times), by the same clock; empty
  // otherwise.
  std::vector<double> node_forward_s = {}, node_backward_s = {};
  // The mean over the measured steps of forward + backward: a throughput, which keeps the
  // rare long steps a time-shared core gives (the medians above drop them).
  double mean_compute_s = 0.0;
};
struct RuntimeUnitOptions {
  std::string model;                // a catalog name
  std::string graph_file = {};      // or a graph file (docs/your-network.md): model unused
  placement::ModelOptions options;  // options.batch_size: the micro-batch, one per step
  int warmup = 2;
  int steps = 5;
  uint64_t seed = 1;
  kernels::Device device = kernels::Device::cpu;
  int threads = 1;  // CPU threads of this rank
  // Time the units by the rank's main-thread CPU time (RankStepRecord::*_cpu_s) instead of
  // the wall clock: the calibration of a CPU-time profile (`interplace profile --clock cpu`).
  bool cpu_time = false;
  // Also time every node inside the units (RuntimeUnits::node_*): the profile's
  // calibration; two clock reads per node and pass.
  bool node_times = false;
  // Micro-batches of options.batch_size per step, run as GPipe (all in flight before the
  // first backward); the units are then the step's, for all of them.
  int micro_batches = 1;
  // The device preset the one-rank run is planned against: its memory is what the placer
  // checks the whole graph against (on a GPU, the GPU's preset: cpu-core's 8 GB would
  // refuse a model the GPU holds).
  std::string cost_device = "cpu-core";
};
RuntimeUnits time_runtime_units(const RuntimeUnitOptions& options);
// Steps of about a second at `step_s` per step (at least `at_least`, at most 2000): a
// median over a few steps of milliseconds is not repeatable (docs/simulator.md).
int runtime_unit_steps(double step_s, int at_least);

// One message size of the ping-pong: the median over `iterations` round trips, halved.
struct PingPongSample {
  int64_t bytes = 0;
  int iterations = 0;
  double half_round_trip_s = 0.0;
};

struct LinkMeasurement {
  bool measured = false;  // false with one rank: there is no link to measure
  std::vector<PingPongSample> samples;
  // latency = half round trip of the smallest message; bandwidth = the largest message's
  // bytes / its half round trip (where the latency is negligible).
  placement::LinkSpec link;
};

// Message sizes 1 B, 4 B, 16 B, ... up to max_bytes (powers of 4; max_bytes included),
// each rounded up to a multiple of `unit` bytes (4 for a device's whole floats), sizes
// that round to the same count kept once: strictly ascending, as a link curve must be.
std::vector<int64_t> ping_pong_sizes(int64_t max_bytes, int64_t unit = 1);

// Collective over `comm`: ranks 0 and `peer` play ping-pong (blocking send/receive) over
// ping_pong_sizes(max_bytes); other ranks return at once. The result is complete on rank 0
// only. Throws runtime for MPI errors. With a device other than the CPU (whose backend
// the caller has started on ranks 0 and 1) each message goes from device memory to device
// memory the way the runtime's Messenger sends it: copied into a pinned host staging
// buffer, sent, received into one and copied to the device, each copy waited for; sizes
// are then ping_pong_sizes(max_bytes, 4) (whole floats: 1 B and 4 B are one 4 B size).
// `peer`: the rank that plays with rank 0 (link_peers picks the one within rank 0's host
// and the one on another host).
LinkMeasurement measure_link(MPI_Comm comm, int64_t max_bytes = int64_t{64} << 20, int peer = 1,
                             kernels::Device device = kernels::Device::cpu);

// The receiving rank's own time per message, by size (placement::LinkSpec::receive_cpu):
// collective over `comm`; `peer` sends, rank 0 receives, other ranks return at once. For
// each of `sizes` (bytes, rounded up to whole floats) the peer sends a burst of messages
// from freshly written tensors (as a layer's outputs) through the runtime's Messenger and
// both ranks meet at a barrier, so every message is waiting when rank 0 takes it; rank 0
// then takes them one by one with Messenger::receive (buffer, post, poll to completion:
// the shared-memory copy is the receiver's) and times each by `clock` (thread CPU time or
// wall time). The median per size is one point; the whole sweep runs twice and the first
// is discarded (warm-up). On the CPU device only (the caller's choice). Complete on rank 0.
std::vector<placement::LinkPoint> measure_receive_cpu(MPI_Comm comm, int peer,
                                                      const std::vector<int64_t>& sizes,
                                                      bool cpu_clock);

// How ranks on one host slow each other down (placement::HostSharing): collective over
// `host` (the ranks of one host). For every P = 2..size and n = 1..P, host ranks 0..n-1
// run time_runtime_units(options) at once while ranks n..P-1 wait in MPI the way the
// runtime waits for a message (a spinning MPI_Wait) and the others sleep, for about a
// second of steps (at least options.steps) so that their timed steps overlap; factor(P, n)
// is the median over the n ranks of their mean forward + backward over the mean of the
// same units on host rank 0 with every other rank asleep. solo_s (the units' time alone,
// roughly) sizes the run. The result is complete on host rank 0.
placement::HostSharing measure_host_sharing(MPI_Comm host, const RuntimeUnitOptions& options,
                                            double solo_s);

// Whom rank 0 plays ping-pong with, to measure the two levels of links: `intra` the lowest
// other rank on its host (MPI_COMM_TYPE_SHARED), `inter` the lowest rank on another host;
// -1 where there is none. devices_per_node: the ranks on rank 0's host (every host is
// assumed to hold as many). Collective over `comm`; the same on every rank.
struct LinkPeers {
  int intra = -1;
  int inter = -1;
  int devices_per_node = 1;
};
LinkPeers link_peers(MPI_Comm comm);

// A barrier that waits without spinning (a non-blocking barrier polled every millisecond),
// so that ranks waiting for rank 0 leave the cores to its timings.
void quiet_barrier(MPI_Comm comm);

// "<CPU model name> (N threads)" from /proc/cpuinfo, for the profile's device line.
std::string cpu_device_name(int threads);

// What a profile is measured from (docs/profile-format.md): `interplace profile`'s options,
// and what a sweep's `cost_device = "profile:auto"` measures for each of its configurations.
struct ProfileRequest {
  std::string model;
  std::string graph_file = {};      // or a graph file's network (docs/your-network.md)
  placement::ModelOptions options;  // batch_size: the micro-batch the nodes are timed at
  int repeats = 5;
  int warmup = 2;
  int threads = 0;  // CPU threads; 0: the node's cores divided among its ranks
  kernels::Device device = kernels::Device::cpu;
  uint64_t seed = kDefaultSeed;
  // The link written when rank 0 has no second rank on its host to ping-pong with, and the
  // preset it comes from (also the device the calibration run is planned against).
  placement::LinkSpec fallback_link = {};
  std::string fallback_link_name;
  bool cpu_clock = false;  // node times and runtime units by the thread's CPU time
  // For the estimates of a graph file's opaque nodes (NodeTimingOptions).
  double memory_bandwidth_bytes_per_s = 15e9;
};

struct MeasuredProfile {
  placement::Profile profile;
  LinkMeasurement link;        // within rank 0's host
  LinkMeasurement inter_node;  // between rank 0's host and another (multi-host runs only)
  LinkPeers peers;
  std::string link_source;                        // "ping-pong" or "device preset <name>"
  std::vector<placement::LinkPoint> receive_cpu;  // the receiver's time per message
  int threads = 0;
  int ranks = 1;
};

// Collective over `comm` (every rank calls it): the link between rank 0 and its peers
// (link_peers), the receiver's share of a message, then on rank 0 every node's time
// (time_nodes), the auxiliary heads', the runtime's units on one rank and with 4 and 8
// micro-batches in flight, and how the ranks of rank 0's host slow each other down. The
// result is complete on rank 0 only; a failure there is thrown on rank 0 after the others
// have finished their part.
MeasuredProfile measure_profile(const ProfileRequest& request, MPI_Comm comm);

}  // namespace interplace::runs
