// The cost model: how long a node takes forward and backward, how long a tensor takes to
// cross a link, and how much memory a set of nodes needs on one device.
//
// Node times come from a measured profile (profile.hpp) when the cost model has one,
// otherwise from a roofline on the device description:
//   time_s = max(flops / peak_flops_per_s, bytes / memory_bandwidth_bytes_per_s)
//   bytes  = input activation bytes (distinct producers) + output activation bytes
//            + parameter bytes (fp32), the same traffic estimate forward and backward.
// Communication: transfer_s(bytes) = latency_s + bytes / bandwidth_bytes_per_s.
// Memory on a device: parameter_state_bytes of its nodes
//   = parameters * 4 bytes * (1 weights + 1 gradients + optimizer state factor)
//     (state factor: SGD 0, SGD with momentum 1, AdamW 2)
// plus the activations kept for backward: the output bytes of its nodes times the number
// of micro-batches in flight.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/compute_sharing.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/profile.hpp"

namespace interplace::placement {

struct DeviceSpec {
  std::string name;
  double peak_flops_per_s = 0.0;
  double memory_bandwidth_bytes_per_s = 0.0;
  int64_t memory_capacity_bytes = 0;
};

enum class OptimizerKind { sgd, sgd_momentum, sgd_nesterov, adamw };
// "sgd" (plain: no momentum), "sgd-momentum" (momentum 0.9), "sgd-nesterov" (Nesterov
// momentum 0.9, PyTorch's SGD(nesterov=True)), "adamw": one meaning in the
// cost model, `train` and sweep specs. Throws invalid_input listing them for anything else.
OptimizerKind optimizer_by_name(std::string_view name);
const std::vector<std::string>& optimizer_names();  // in the order above
std::string to_string(OptimizerKind kind);
int optimizer_state_factor(OptimizerKind kind);  // extra fp32 copies of the parameters

// What the placers and the simulator consume: one entry per node of one graph.
struct NodeCosts {
  std::vector<double> forward_s;
  std::vector<double> backward_s;
  // A backward pass for the input gradient alone (a pass through a stage it does not
  // train: kernels::Gradients::inputs_only).
  std::vector<double> backward_input_s;
  std::vector<int64_t> parameter_state_bytes;  // weights + gradients + optimizer state
  std::vector<int64_t> output_bytes;           // sent to consumers, kept for backward
  // Tied weights (zoo.hpp): for a "tied_linear" head, the node owning its weight
  // (replica_owner) and the bytes of a replica, its values and gradient (replica_bytes);
  // -1 and 0 for other nodes, and both may be empty (no tied weights). A device holding
  // heads of a weight owned elsewhere keeps one replica of it: device_memory_bytes and
  // pipeline_costs charge it once per device and weight, node memory_bytes does not.
  std::vector<NodeId> replica_owner;
  std::vector<int64_t> replica_bytes;

  int node_count() const { return static_cast<int>(forward_s.size()); }
  double compute_s(NodeId id) const { return forward_s[id] + backward_s[id]; }
  // Memory the node adds to its device with `in_flight_micro_batches` activations kept
  // (a tied head's replica is the device's, not the node's: replica_bytes).
  int64_t memory_bytes(NodeId id, int in_flight_micro_batches) const {
    return parameter_state_bytes[id] + output_bytes[id] * in_flight_micro_batches;
  }
  // Per device: the replicas of tied weights its heads need (one per weight owned by
  // another device), in bytes.
  std::vector<int64_t> replica_bytes_per_device(const std::vector<int>& device_of_node,
                                                int device_count) const;
};

// How much longer a rank's node times are per micro-batch than the profile's (measured
// with one micro-batch in flight) when the rank keeps `bytes` of activations and
// parameter state, as CostModel::working_set_factor gives it.
struct WorkingSetFactor {
  double forward = 1.0;
  double backward = 1.0;  // backward_s and backward_input_s alike
};

class CostModel {
 public:
  // A roofline cost model. Throws invalid_input for non-positive peak, bandwidths or
  // capacity, or a negative latency (an infinite link bandwidth is allowed).
  CostModel(DeviceSpec device, LinkSpec link,
            OptimizerKind optimizer = OptimizerKind::sgd_momentum);
  // Node times and the link from a measured profile; `device` supplies the memory
  // capacity (and the roofline numbers, unused here). Throws invalid_input when the
  // device has a name that differs from the profile's.
  static CostModel from_profile(Profile profile, DeviceSpec device,
                                OptimizerKind optimizer = OptimizerKind::sgd_momentum);

  const DeviceSpec& device() const { return device_; }
  const LinkSpec& link() const { return link_; }
  OptimizerKind optimizer() const { return optimizer_; }
  const std::optional<Profile>& profile() const { return profile_; }

  // How many of a placement's devices share one host, consecutive devices filling a host
  // (mpirun's and srun's default); 0, the default: all of them. Where the profile measured
  // how ranks on one host slow each other down (Profile::host_sharing), the simulators
  // apply it to the devices of each host (compute_sharing.hpp). Throws invalid_input < 0.
  void set_ranks_per_host(int ranks);
  int ranks_per_host() const { return ranks_per_host_; }
  // The sharing of `devices` devices under this model; inactive without a measured table.
  ComputeSharing compute_sharing(int devices) const;

  double transfer_s(int64_t bytes) const;
  // What a rank spends at the start of a mini-batch of `samples` samples outside its
  // units (drawing and slicing the batch): the profile's runtime_overhead_s per sample
  // of its batch size, times `samples`; 0 without a measured one (the roofline has no
  // term for it).
  double mini_batch_overhead_s(int64_t samples) const;
  double roofline_s(int64_t flops, int64_t bytes) const;
  int64_t parameter_state_bytes(int64_t parameter_count) const;

  // The profile's runtime_in_flight measurements as a function of a rank's working set
  // (docs/simulator.md, "Working set"): the whole graph on one rank with M micro-batches in
  // flight keeps sum over nodes of costs.memory_bytes(node, M); its units per micro-batch
  // there, over those at M = 1, are the factors at that many bytes, linear between the
  // measured M and held at the ends (1 at or below one micro-batch's working set, the
  // largest M's factor above it). {1, 1} without such measurements. `costs` are this
  // model's node_costs of the graph.
  WorkingSetFactor working_set_factor(const NodeCosts& costs, int64_t bytes) const;
  bool has_working_set_factor() const;

  // Per-node costs for `graph`. With a profile, throws invalid_input when the profile's
  // batch size differs from the graph's or its node names do not match the graph's.
  NodeCosts node_costs(const Graph& graph) const;

 private:
  DeviceSpec device_;
  LinkSpec link_;
  OptimizerKind optimizer_;
  std::optional<Profile> profile_;
  int ranks_per_host_ = 0;
};

}  // namespace interplace::placement
