// Placers map every node to a device. They visit nodes in the given order: that order is
// the sequence of decisions, which is how the traversal order changes the outcome.
//
//   contiguous   splits the order into K contiguous non-empty chunks (chunk i -> device i)
//                minimising the largest device_loads_s (dynamic programming, exact)
//   stages       contiguous, but cutting the order only where exactly one tensor crosses
//                and no edge points back: the stage chains with single-tensor boundaries
//                that local and interlocking strategies need (ResNet block, Inception
//                module and Transformer layer boundaries), balanced by the same DP
//   greedy-eft   list scheduling in the order: each node goes to the device where it
//                would finish earliest (forward+backward time, after the device is free
//                and the tensors of already placed predecessors have arrived), Baechi's m-ETF
//   balanced     fills devices in order, each up to 1/K of the total cost: a node goes to
//                the device whose share contains the midpoint of its cumulative cost
//                (never an earlier device than the previous node's), Baechi's m-TOPO
//   round-robin  i-th node of the order on device i mod K
//   random       seeded uniform device per node
//   rl           Placeto's learned policy trained with REINFORCE against the estimator
//                (rl_placer.hpp); returns the best memory-feasible placement it visited
//   refine       starts from another placer's result; for R rounds visits the nodes in the
//                order and moves each to the device that most lowers the estimated step
//                time (Placeto's decision process with a greedy policy). Candidate
//                devices are those of the node's inputs and consumers plus the device
//                with the least compute, or every device with refine_all_devices: each
//                candidate costs one full estimate, so this keeps large graphs tractable.
//
// The splits users of PyTorch's pipelining tools get today (docs/placers.md, "Baselines"),
// on the graph's layers: runs of nodes, consecutive in the order, of one source module (a
// graph file's `module`; a node without one is a layer of its own), so that every cut is a
// module boundary. Costs are not looked at; a split that overflows a device is refused.
//   even-layers           torchtitan's (and torch pipelining's examples') even split of the
//                         transformer blocks: the children of the module with the most
//                         numbered children, the layers before them (embeddings) on the
//                         first stage and after them (norm, output) on the last, each
//                         weighed as one block (first/last_stage_less_layers = 1)
//   deepspeed-uniform     DeepSpeed PipelineModule partition_method="uniform": the same
//                         number of layers a stage, the first ones one more
//   deepspeed-parameters  partition_method="parameters" (its default): the layers' trainable
//                         parameter counts split by DeepSpeed's partition_balanced
//
// All others respect the per-device memory capacity (a node needs its parameter state plus its
// output activation for each micro-batch its device keeps at once: `micro_batches` under
// GPipe, the worst case, or `kept_micro_batches` when the schedule keeps fewer): a
// node that does not fit where a placer would put it goes to the next device that has
// room. They throw invalid_input when placement is impossible: K < 1, K greater than the
// node count, an order that is not a permutation of the nodes, a node larger than one
// device, more total memory than K devices hold, or (for the greedy placers) no room left
// for a node.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/rl_placer.hpp"

namespace interplace::placement {

// Lower is better; refine keeps a move only when it lowers this value.
using StepTimeEstimator = std::function<double(const Placement&)>;

struct PlacementRequest {
  int device_count = 1;
  CostModel cost_model;
  // Per-device capacity; unset means the cost model's device capacity.
  std::optional<int64_t> memory_capacity_bytes = std::nullopt;
  // Micro-batches whose activations a device keeps (memory check) and that the default
  // step-time estimator pipelines.
  int micro_batches = 1;
  // Micro-batches whose activations a device keeps at once, when the schedule keeps fewer
  // than `micro_batches` (1F1B: at most K, min(M, K) on its first stage); 0: all of them.
  int kept_micro_batches = 0;
  int memory_micro_batches() const {
    return kept_micro_batches > 0 ? kept_micro_batches : micro_batches;
  }
  uint64_t seed = 0;  // random
  // refine: the starting placer (any other placer name), the number of rounds (it stops
  // early when a round moves nothing), the candidate devices, and the estimator (empty:
  // estimate_step_time_s with `micro_batches`).
  std::string refine_start = "balanced";
  int refine_rounds = 2;
  bool refine_all_devices = false;
  StepTimeEstimator refine_estimator = {};
  // rl: training options (rl_placer.hpp) and, when set, where the learning curve goes.
  RlOptions rl = {};
  RlTrainingLog* rl_log = nullptr;

  int64_t capacity_bytes() const {
    return memory_capacity_bytes.value_or(cost_model.device().memory_capacity_bytes);
  }
};

using Placer = std::function<Placement(const Graph&, const Order&, const PlacementRequest&)>;

Placement place_contiguous(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_stages(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_greedy_eft(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_balanced(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_round_robin(const Graph& graph, const Order& order,
                            const PlacementRequest& request);
Placement place_random(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_refine(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_rl(const Graph& graph, const Order& order, const PlacementRequest& request);
Placement place_even_layers(const Graph& graph, const Order& order,
                            const PlacementRequest& request);
Placement place_deepspeed_uniform(const Graph& graph, const Order& order,
                                  const PlacementRequest& request);
Placement place_deepspeed_parameters(const Graph& graph, const Order& order,
                                     const PlacementRequest& request);

// The placers of the registry (placer_registry.cpp), in the order of placer_names().
enum class PlacerKind {
  contiguous,
  stages,
  greedy_eft,
  balanced,
  refine,
  round_robin,
  random,
  rl,
  even_layers,
  deepspeed_uniform,
  deepspeed_parameters
};

// "contiguous", "stages", "greedy-eft", "balanced", "refine", "round-robin", "random", "rl",
// "even-layers", "deepspeed-uniform", "deepspeed-parameters".
const std::vector<std::string>& placer_names();
// Throws invalid_input for an unknown name, listing the valid ones.
PlacerKind placer_kind_by_name(std::string_view name);
std::string to_string(PlacerKind kind);
Placer placer_of(PlacerKind kind);
// placer_of(placer_kind_by_name(name)).
Placer placer_by_name(std::string_view name);

// Throws invalid_input with the reason when no placement can exist (see above).
void require_placeable(const Graph& graph, const Order& order, const PlacementRequest& request,
                       const NodeCosts& costs);

}  // namespace interplace::placement
