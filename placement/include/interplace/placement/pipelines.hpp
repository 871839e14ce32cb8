// The pipeline registry: every pipeline schedule's facts in one table (pipelines.cpp), and
// the one check of a pipeline choice that `simulate`, `train` and `sweep` all plan through
// (plan_pipeline). Adding a pipeline is a row of the table and its builder of compute-only
// per-device lists; build_schedule (schedule.hpp) adds the sends and receives in one pass.
//
// A pipeline of K devices runs K*V model stages, V per device (its chunks); the stage map
// says which device runs stage s:
//   loop  stage s on device s mod K (chunk s / K): devices 0 1 2 3 0 1 2 3 for K = 4, V = 2
//   v     chunks alternate direction, so device j holds stages j and 2K-1-j (V = 2):
//         devices 0 1 2 3 3 2 1 0 (ZBV, DualPipeV)
// Meaning by example (K = 2, M = 2, global strategy; grid_label's letters as in the grids
// of docs/strategies.md: "F1" forward of micro-batch 1, "B1" its backward, "W1" its weight
// pass, "S" the optimiser step):
//   gpipe             rank 0: F0 F1 B0 B1 S          rank 1: F0 F1 B0 B1 S
//   1f1b              rank 0: F0 F1 B0 B1 S          rank 1: F0 B0 F1 B1 S
//   zb-h1             rank 0: F0 F1 B0 W0 B1 W1 S    rank 1: F0 B0 F1 B1 W0 W1 S
//   interleaved-1f1b  (V = 2) rank 0: F0 F1 F0/1 F1/1 B0/1 B1/1 B0 B1 S (chunk 1: "/1")
//   looped-bfs        (V = 2) rank 0: F0 F1 F0/1 F1/1 B1/1 B0/1 B1 B0 S
//   interleaved-zb    (V = 2) rank 1: F0 F1 F0/1 B0/1 F1/1 B1/1 W0/1 B0 W1/1 B1 W0 W1 S
//   zbv               (v map) rank 0: F0 F1 F0/1 B0/1 W0/1 F1/1 B1/1 W1/1 B0 W0 B1 W1 S
//   dualpipev         (v map, M = 4) rank 0: F0 F1 F2 F0/1 B0/1 W0/1 F1/1 F3+B1/1
//                     F2/1+B0 B2/1 F3/1+B1 B3/1 B2 W2 B3 W3 S ("F3+B1/1": an overlapped pair)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace interplace::placement {

struct Action;
struct Schedule;

enum class PipelineKind {
  gpipe,
  one_f_one_b,
  zb_h1,
  interleaved_1f1b,
  looped_bfs,
  interleaved_zb,
  zbv,
  dualpipev
};
enum class StageMap { loop, v };

// What a pipeline does under a local or interlocking strategy (a reach below K-1), whose
// order is the interlocked schedule's (schedule.hpp): GPipe's "all forwards first" has no
// meaning there and gives way to it; the split and chunked backwards are refused.
enum class OtherStrategies { run, run_1f1b_instead, refused };

struct PipelineInfo {
  PipelineKind kind;
  const char* name;   // "1f1b": specs, flags, result files
  const char* title;  // "1F1B": tables and docs
  OtherStrategies other_strategies;
  bool network_loss_only;     // refuses interlock mode sum (the losses of every stage)
  bool takes_virtual_stages;  // V > 1 allowed
  // The one count of chunks per device the pipeline runs (2 for the v map's pipelines,
  // PyTorch's rule); 0 for any. A choice of V = 1 (the default) becomes it.
  int fixed_virtual_stages;
  // With V > 1, M must be a multiple of K: each chunk's group of K micro-batches comes
  // back to device 0 just as it needs the group (Megatron-LM's rule).
  bool micro_batches_in_groups_of_devices;
  bool micro_batches_at_least_stages;  // M >= K*V (DualPipeV, as PyTorch requires)
  StageMap stage_map;
  // The micro-batches whose activations the busiest device keeps at once under the
  // global strategy, in units of a whole device's activations: what the placers charge
  // each stage. GPipe all M (every forward before the first backward); 1F1B at most K
  // (stage s keeps min(M, K - s)); ZB-H1 as 1F1B (stage 0 keeps min(M, K) between F and
  // its W, the ones past B with only what W needs); interleaved 1F1B min(MV, VK) chunk
  // passes on device 0, each of a V-th of its layers: min(M, K), rounded up. Null: the
  // most that the busiest device's compute order keeps (kept_in_order), the rows whose
  // rule has no short form.
  int (*kept_micro_batches)(int micro_batches, int devices, int virtual_stages);
  // Device j's compute actions for one mini-batch (mini_batch 0): forward, backward,
  // backward_weight, aux passes, no messages and no optimiser step (build_schedule adds
  // them). `header` holds the counts, reach, interlock mode and heads.
  std::vector<Action> (*compute_actions)(const Schedule& header, int device);
};

// Every pipeline, in the order help texts list them.
const std::vector<PipelineInfo>& pipeline_registry();
const PipelineInfo& pipeline_info(PipelineKind kind);
// A registry row's name ("gpipe", "1f1b", ...); invalid_input listing them for another name.
PipelineKind pipeline_by_name(std::string_view name);
const std::vector<std::string>& pipeline_names();
std::string to_string(PipelineKind kind);
// The registry's kept_micro_batches of `pipeline` (M micro-batches, K devices, V chunks).
int micro_batches_kept(PipelineKind pipeline, int micro_batches, int devices,
                       int virtual_stages = 1);
// What the global strategy's compute order of `pipeline` keeps: on the device that keeps
// the most chunk passes between a forward and the last backward (or W) of its (micro-batch,
// chunk), that count in whole devices' activations (divided by V, rounded up).
int kept_in_order(PipelineKind pipeline, int micro_batches, int devices, int virtual_stages);

// For the builders of chunked schedules: device j's backward of micro-batch m on its chunk
// c, of the network's loss (the last model stage), accumulating the chunk's parameter
// gradients and passing the input gradient on unless it is model stage 0.
Action network_loss_backward(const Schedule& header, int device, int chunk, int micro_batch);

// Under `map` with K devices: the device that runs model stage s, and the model stage of
// device j's chunk c. Throws invalid_input outside 0..K*V-1 (v: V = 2 alone).
int device_of_stage(StageMap map, int stage, int devices);
int stage_of_chunk(StageMap map, int device, int chunk, int devices);

// A pipeline as asked for: by a flag, a spec key or a request.
struct PipelineChoice {
  std::optional<PipelineKind> pipeline;  // unset: gpipe for the global strategy, else 1f1b
  int reach = 0;                         // the strategy's on `devices` (strategy_reach)
  std::string strategy;                  // its name, for messages
  int devices = 1;
  int virtual_stages = 1;
  int micro_batches = 1;
  bool interlock_sum = false;
};

// The pipeline that runs, and what planning takes from it.
struct PipelinePlan {
  PipelineKind kind = PipelineKind::one_f_one_b;
  StageMap stage_map = StageMap::loop;
  int devices = 1;
  int virtual_stages = 1;
  // Global strategy: what the placers charge each stage (kept_micro_batches); 0 for the
  // others, whose flows the placers count themselves.
  int kept_micro_batches = 0;

  int stages() const { return devices * virtual_stages; }  // what the placer cuts
};

// The one check of a choice, with one error text per rule, each with a HINT: a pipeline
// refused by the strategy, virtual stages with a pipeline that has none, micro-batches not
// a multiple of K with V > 1, interlock mode sum with a pipeline of the network's loss
// alone; V and M within their bounds. A non-global strategy's gpipe becomes 1f1b.
PipelinePlan plan_pipeline(const PipelineChoice& choice);

}  // namespace interplace::placement
