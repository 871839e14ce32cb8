// A plan PyTorch can run (`place`/`simulate --save-torch-plan`, docs/your-network.md): a
// stage placement as torch.distributed.pipelining's split points, and a schedule as its
// schedule class and per-rank action lists.
//
// Split points. torch's `pipeline(module, mb_args, split_spec={fqn: SplitPoint.BEGINNING})`
// puts a pipe_split before every call of the module at `fqn` and cuts the traced program at
// them, in execution order. The importers write nodes in that order, each with the module
// (FQN) that ran it, so a placement of the K*V model stages that is contiguous in node order
// maps to the split points when each later stage begins at a module boundary: its first
// node's module M has no node in an earlier stage (neither M itself nor a module inside it)
// and M's nodes are consecutive (one call: a module called twice would be split before each
// call). The split point is M, or the outermost module around M that also begins there,
// runs an op of its own and runs once: "encoder.layers.1" where the stage begins at its
// self_attn (a cut between two submodules of a block, "encoder.layers.0.linear1", is a
// module boundary too: torch splits inside the block's forward).
//
// Schedule. PyTorch's notation (torch/distributed/pipelining/schedules.py, _Action's
// repr): "<stage>F<micro-batch>" forward, "B" full backward, "I" the input-gradient backward
// of a split one (zero bubble), "W" its weight pass, "(<a>;<b>)OVERLAP_F_B" an overlapped
// forward and backward (DualPipeV); the stage is the model stage, torch's stage_index. A
// rank's list is the compute actions of one mini-batch (mini-batch 0), as
// _PipelineScheduleRuntime takes them (format "compute_only": it adds the sends and
// receives itself).
// Example (graph  x -> embed -> encoder.layers.0 -> encoder.layers.1 -> head, 2 stages cut
// before encoder.layers.1; 1f1b, M = 2): split points {"encoder.layers.1"}, class
// Schedule1F1B, rank 0: 0F0 0F1 0B0 0B1, rank 1: 1F0 1B0 1F1 1B1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

// PyTorch's named schedule class of a pipeline (torch.distributed.pipelining.schedules).
enum class TorchScheduleClass {
  none,  // torch has no class of this pipeline (ZB-H1): the action lists run it
  gpipe,
  one_f_one_b,
  interleaved_1f1b,
  looped_bfs,
  interleaved_zero_bubble,
  zbv_zero_bubble,
  dualpipev
};

struct TorchSchedule {
  TorchScheduleClass torch_class = TorchScheduleClass::none;
  // Whether the class runs the pipeline's own order (its actions equal the plan's): false
  // for interleaved-1f1b, whose class warms up 2 (K-1-r) + (V-1) M/rounds forwards where
  // interplace's order warms up K-1-r + (V-1) K; the plan's action lists, through
  // _PipelineScheduleRuntime, run the order interplace simulated either way.
  bool class_runs_this_order = false;
};

// The pipeline's torch class: gpipe ScheduleGPipe, 1f1b Schedule1F1B, zb-h1 none,
// interleaved-1f1b ScheduleInterleaved1F1B (another order), looped-bfs ScheduleLoopedBFS,
// interleaved-zb ScheduleInterleavedZeroBubble, zbv ScheduleZBVZeroBubble, dualpipev
// ScheduleDualPipeV.
TorchSchedule torch_schedule_of(PipelineKind pipeline);
// The class's name in torch ("ScheduleGPipe", ...); "" for none.
std::string to_string(TorchScheduleClass torch_class);

struct TorchStage {
  int index = 0;  // the model stage: torch's stage_index
  int rank = 0;   // the device that runs it (the stage map)
  // The split point the stage begins at (SplitPoint.BEGINNING); empty for stage 0.
  std::string begins_at;
  std::string first_node;  // its first node's name
  int node_count = 0;
  int64_t parameter_count = 0;  // the sum of its nodes' (what torch's stage module holds)
};

struct TorchPlan {
  std::string graph;  // the graph's name
  PipelineKind pipeline = PipelineKind::gpipe;
  TorchSchedule schedule;
  int ranks = 1;            // K, torch's pp_group_size
  int stages_per_rank = 1;  // V
  StageMap stage_map = StageMap::loop;
  int micro_batches = 1;                          // torch's n_microbatches
  std::vector<TorchStage> stages;                 // K*V, by index
  std::vector<std::vector<int>> rank_stages;      // per rank: its stage indices, chunk order
  std::vector<std::vector<std::string>> actions;  // per rank: PyTorch's notation

  // The split points in stage order: stages[1..].begins_at.
  std::vector<std::string> split_points() const;
};

// The torch plan of `stages`, the placement of the schedule's K*V model stages (device s =
// model stage s), and `schedule` (stage level, global strategy). Throws invalid_input, each
// message ending in a HINT, when the graph has no module paths, the stages are not
// contiguous in node order, one is empty or holds only the input, a stage does not begin at a
// module boundary (above), or the schedule is not the global strategy's stage-level schedule of
// that many stages.
TorchPlan torch_plan(const Graph& graph, const Placement& stages, const Schedule& schedule);

// One action in PyTorch's notation, for device `rank` of `schedule`: "3F0", "3I0", "3W0",
// "3B0", "(0F3;3B1)OVERLAP_F_B"; nullopt for the actions PyTorch's compute-only lists lack
// (sends, receives, the optimiser step). Throws invalid_input for an action the global
// strategy does not have (auxiliary heads, a backward that leaves the parameters alone).
std::optional<std::string> torch_action_text(const Action& action, const Schedule& schedule,
                                             int rank);

// The plan as JSON, format "interplace-torch-plan" version 1 (docs/your-network.md), and
// written to a file (invalid_input when it cannot be written).
std::string torch_plan_json(const TorchPlan& plan);
void write_torch_plan_file(const std::string& path, const TorchPlan& plan);

}  // namespace interplace::placement
