// One training configuration, run for real on the ranks of an MPI communicator: the
// contract between the runtime (`interplace train`), the sweep driver and the HDF5 writer
// (docs/results-format.md names every field below the same way).
//
// Life of a configuration:
//   plan_config(config)           every rank, no MPI: validates the configuration, parses
//                                 its names once (strategy, pipeline, interlock mode,
//                                 device), builds the graph, order, placement, the one
//                                 schedule every rank executes and the simulator's
//                                 prediction of that schedule; throws invalid_input with the reason
//                                 when the configuration cannot run (unknown name, impossible
//                                 device count, local strategy on a non-chain placement,
//                                 does not fit in memory). The sweep records such a
//                                 configuration as `skipped` with that reason.
//   train(plan, comm)             collective over `comm` (size == config.ranks(): devices
//                                 x data_parallel): real
//                                 training steps, then evaluation. An error on any rank
//                                 stops every rank of `comm` promptly and all of them
//                                 throw (the sweep records `failed` and goes on); nothing
//                                 hangs and no message leaks into the next configuration.
// The result is complete on rank 0 of `comm`; other ranks return their own part only.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interplace/kernels/tensor.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/graph_stats.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/placement/rl_placer.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/step_simulation.hpp"
#include "interplace/placement/torch_plan.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/config_choices.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/recipe.hpp"
#include "interplace/runs/run_defaults.hpp"

namespace interplace::runs {

struct TrainConfig {
  std::string model = "resnet20";
  placement::ModelOptions model_options = {};  // batch_size is ignored: see batch_size
  // A graph file (docs/your-network.md) whose network is trained instead of a zoo model
  // (train --graph-file, the sweep key graph_file). resolve_graph_file then sets `model` to
  // its graph's name, graph_digest to the file's FNV-1a 64 (part of the configuration's id,
  // so an edited file is another configuration) and graph_family to its family.
  std::string graph_file = {};
  std::string graph_digest = {};
  std::string graph_family = {};
  // The closed sets are typed values (config_choices.hpp), parsed once from their names.
  OrderChoice order = placement::OrderKind::topo;
  PlacerChoice placer = placement::PlacerKind::contiguous;
  // The rl placer's settings (placer "rl" only; rl_placer.hpp, RlPreset).
  placement::RlPreset rl_preset = placement::RlPreset::standard;
  // Plan and simulate only: no rank trains, the configuration's result is its placement,
  // the simulator's step time and (rl) the placer's learning curve (docs/cli.md,
  // "Simulate-only sweeps": the traversal-order study). Planned on one rank of any job.
  bool simulate_only = false;
  // A placement file (docs/placers.md#placement-files) trained as it is instead of running
  // the placer (train --placement; not a sweep key). Empty: run the placer.
  std::string placement_path;
  int devices = 1;  // K stages: one replica's ranks
  // R replicas of the K-stage pipeline (data parallelism, docs/strategies.md): the job has
  // K x R ranks, world rank = replica * K + stage; batch_size stays the global mini-batch,
  // replica r training its contiguous slice r of batch_size / R samples; each stage's
  // gradients are averaged over its R replicas before the optimiser step.
  int data_parallel = 1;
  placement::Strategy strategy = {};  // global | local | pairwise | nwise:N
  // global only: a pipeline of the registry (placement::pipeline_registry()), or none, e2e
  // (one unpipelined pass, M = 1: the study's end-to-end baseline, scheduled as GPipe with
  // one micro-batch but named apart in results)
  TrainPipeline pipeline = placement::PipelineKind::gpipe;
  InterlockChoice interlock_mode = placement::InterlockMode::single;  // docs/strategies.md
  // interleaved-1f1b: chunks (model stages) per device, V; 1 for every other pipeline.
  int virtual_stages = 1;
  int micro_batches = 1;                   // per mini-batch; must divide batch_size / R
  int64_t batch_size = kDefaultBatchSize;  // samples per mini-batch (one optimiser step)
  // The samples of one replica's mini-batch, batch_size / data_parallel.
  int64_t replica_batch_size() const { return batch_size / std::max(1, data_parallel); }
  // The ranks of the job: devices x data_parallel.
  int ranks() const { return devices * std::max(1, data_parallel); }
  // Samples of one micro-batch, batch_size / (data_parallel x micro_batches): the batch
  // of the planned graph and of its profile. Throws invalid_input unless it divides.
  int64_t micro_batch_samples() const {
    return micro_batch_size(batch_size, micro_batches, {}, data_parallel);
  }
  int warmup_steps = 1;  // run and recorded first, flagged, excluded from medians
  int steps = 10;        // measured steps after the warm-up
  DatasetChoice dataset = DatasetKind::synthetic;  // fashion-mnist | text | synthetic
  std::string data_dir;                            // empty: the dataset's Debian location
  int64_t eval_samples = 0;  // test-split samples evaluated at the end (0: none)
  // sgd (plain) | sgd-momentum (momentum 0.9) | adamw: the cost model's names and state.
  placement::OptimizerKind optimizer = kDefaultOptimizer;
  double learning_rate = 0.05;  // the base rate the schedule scales
  double weight_decay = 0.0;    // added to the gradient, as PyTorch's SGD
  // false: weight decay on convolution and linear weights only; true: on every parameter
  // (biases, norm scales and shifts too), as the study's SGD(model.parameters(), ...).
  bool weight_decay_all = false;
  LrSchedule lr_schedule = {};  // constant by default (recipe.hpp)
  // > 0: the run's length in epochs of the training split; resolve_epochs() then sets
  // steps = ceil(epochs * floor(train_size / batch_size)) - warmup_steps.
  double epochs = 0.0;
  std::vector<double> eval_epochs;  // the test split is evaluated after these epochs
  // > 0: only the first eval_epoch_samples test samples are evaluated after each of
  // eval_epochs (cheaper curves on a small machine); 0: the whole test split.
  int64_t eval_epoch_samples = 0;
  // > 0: train on the first train_samples samples of the training split only, shuffled
  // each epoch (with_train_subset); epochs count in this subset. 0: the whole split.
  int64_t train_samples = 0;
  // > 0: this share of the training split is held out as a validation split
  // (with_validation_split; the interlocking study's reference holds out 0.1) and
  // evaluated beside the test split at eval_epochs; training, epochs and train_samples
  // count in what is left. 0: none.
  double validation_fraction = 0.0;
  Augmentation augmentation = Augmentation::none;  // training batches only, never evaluation
  // The auxiliary heads' widths (aux_heads.hpp); the default is the study's uncapped
  // 128/64-channel head.
  placement::AuxHeadWidth aux_head = placement::AuxHeadWidth::study;
  uint64_t seed = kDefaultSeed;  // weights, data order, dropout, random orders/placers
  // native: interplace's kernels; torch: PyTorch runs the imported module's stages
  // (docs/runtime.md, "The PyTorch runtime"; graph_file of a PyTorch import only).
  RuntimeChoice runtime = RuntimeKind::native;
  DeviceChoice device = kernels::Device::cpu;  // cpu | cuda (one GPU per rank, by node-local rank)
  std::string cost_device = "cpu-core";        // device preset the placer's cost model uses
  std::string profile_path;                    // a measured profile replaces the preset when set
  // profile_path "auto" (sweep: cost_device = "profile:auto", train: --profile auto): the
  // profile the job measured for this configuration on its own ranks (auto_profile.hpp),
  // set by the sweep or train before planning. Not part of the question (nor of the id).
  std::shared_ptr<const placement::Profile> measured_profile;
  int threads_per_rank = 0;  // CPU threads per rank; 0: cores on node / ranks on node
  // Seconds a rank may wait for another (a message, a barrier) before the configuration
  // fails naming what it waited for: a stopped or hung rank must not leave the others
  // spinning forever. Not part of the question asked (nor of a configuration's id).
  double watchdog_s = 300.0;
  // Wall-clock seconds the training steps of this configuration may take (0: no limit): past
  // it the run fails after the step in progress. Like watchdog_s, not part of the id.
  double time_limit_s = 0.0;

  // "resnet20 topo contiguous K=2 global/gpipe M=4 B=32": for progress lines and tables.
  std::string display_name() const;
};

// Everything decided before any rank trains. Deterministic: every rank computes the same.
struct TrainPlan {
  TrainConfig config;
  std::string family;      // the zoo's family of the model
  placement::Graph graph;  // ends at the logits (the loss is the runtime's)
  std::vector<placement::NodeId> order;
  placement::Placement placement;  // node -> device (rank)
  // node -> model stage: the placer's K*V stages with V virtual stages (each on the device
  // the pipeline's stage map says, placement.device_of_node), else equal to `placement`.
  // The runtime runs a chunk's stage at a time; the prediction simulates these stages.
  placement::Placement stage_placement;
  // The configuration's names, parsed once (parse_choices); nothing downstream reads them.
  placement::Strategy strategy;
  int reach = 0;  // gradient reach of the strategy on `devices` stages
  // The schedule's pipeline (placement::plan_pipeline): the configured one for global
  // strategies, 1F1B (the interlocked schedule) for the others, which ignore gpipe; its
  // virtual stages, stage map and what the placers charge.
  placement::PipelinePlan pipeline;
  placement::InterlockMode interlock = placement::InterlockMode::single;
  kernels::Device device = kernels::Device::cpu;
  // One mini-batch of every rank's actions (plan_schedule): rank r executes
  // schedule.stage_actions[r] once per training step, and on a stage chain `prediction`
  // simulates this same object (docs/runtime.md, "Programs").
  placement::Schedule schedule;
  // Why local/interlocking strategies cannot run on this placement; empty when they can.
  std::string global_only_reason;
  placement::StepReport prediction;  // the simulator's step time for this configuration
  placement::GraphStats graph_stats;
  int64_t parameter_count = 0;  // trainable, without auxiliary heads
  double placer_wall_s = 0.0;   // the placer call's wall time (0 with a placement file)
  std::optional<placement::RlTrainingLog> rl_log;  // placer "rl": what its training did
  // Time every node inside the units (TrainResult::node_times): `interplace profile`'s
  // calibration run sets it; two clock reads per node and pass, so off in other runs.
  bool record_node_times = false;
  // runtime torch: the plan PyTorch runs (split points, per-rank action lists).
  std::optional<placement::TorchPlan> torch_plan;
};

// What one rank spent on each graph node in one training step (indexed by node id; 0 for
// nodes of other ranks): its forward (gathering its inputs, the layer, the loss at the
// sink) and its backward (the layer, accumulating its input gradients), wall and CPU.
struct NodeStepTimes {
  std::vector<double> forward_s, backward_s, forward_cpu_s, backward_cpu_s;
};

// Per step and per rank. Times are wall-clock seconds on that rank for that step (from
// the end of its previous optimiser step to the end of this one).
struct RankStepRecord {
  double step_s = 0.0;
  // Units of work, each without its waits for messages (docs/runtime.md, "Records"):
  double forward_s = 0.0;    // forward of the rank's nodes (and the loss)
  double backward_s = 0.0;   // backward passes through the rank's nodes
  double aux_s = 0.0;        // auxiliary head forward + backward
  double optimizer_s = 0.0;  // optimiser step and tied-weight exchanges
  double comm_wait_s = 0.0;  // blocked in MPI waiting for a message (receives, barriers)
  double idle_s = 0.0;       // step_s - compute (forward+backward+aux+optimizer): bubbles
  double overhead_s = 0.0;   // idle_s - comm_wait_s: time in no unit and no wait
  // The same step and units in CPU seconds of the rank's main thread (docs/runtime.md,
  // "Records": with one kernel thread on the CPU, the rank's compute without the time
  // slices of processes sharing its core; on a GPU host time only). step_cpu_s includes
  // the waits' polling, the units do not.
  double step_cpu_s = 0.0;
  double forward_cpu_s = 0.0;
  double backward_cpu_s = 0.0;
  double aux_cpu_s = 0.0;
  double optimizer_cpu_s = 0.0;
  int64_t bytes_sent = 0;  // payload bytes sent to other ranks
  // On the CPU the process's resident-set high-water mark during the step (VmHWM, reset
  // each step: tensors, the data set and MPI buffers alike); on a GPU the device memory
  // tensors held at most.
  int64_t peak_memory_bytes = 0;
};

// One column of RankStepRecord: its name (the dataset ranks/<name> of a result file, the
// key of train's JSON, a column of the file's summary), unit and meaning. The gather, the
// writer, the summary and the JSON read kRankStepFields; the analysis' RANK_DATASETS lists
// the same names (tests/runs/test_sweep.py checks a written file against it).
struct RankStepField {
  const char* name;
  double RankStepRecord::*seconds;  // set for times, else nullptr
  int64_t RankStepRecord::*count;   // set for byte counts, else nullptr
  const char* units;                // "s" or "bytes"
  const char* long_name;            // the dataset's long_name
  double value(const RankStepRecord& r) const {
    return seconds != nullptr ? r.*seconds : static_cast<double>(r.*count);
  }
  void set(RankStepRecord& r, double v) const {
    if (seconds != nullptr) {
      r.*seconds = v;
    } else {
      r.*count = static_cast<int64_t>(v);
    }
  }
};

// Roughly: ranks/forward_s[step, rank] = records[step].ranks[rank].forward_s.
inline constexpr RankStepField kRankStepFields[] = {
    {"step_s", &RankStepRecord::step_s, nullptr, "s", "step time of the rank"},
    {"forward_s", &RankStepRecord::forward_s, nullptr, "s", "forward compute time"},
    {"backward_s", &RankStepRecord::backward_s, nullptr, "s", "backward compute time"},
    {"aux_s", &RankStepRecord::aux_s, nullptr, "s", "auxiliary head time"},
    {"optimizer_s", &RankStepRecord::optimizer_s, nullptr, "s", "optimizer time"},
    {"comm_wait_s", &RankStepRecord::comm_wait_s, nullptr, "s", "time waiting for messages"},
    {"idle_s", &RankStepRecord::idle_s, nullptr, "s", "idle time (pipeline bubble)"},
    {"overhead_s", &RankStepRecord::overhead_s, nullptr, "s", "time outside the kernels and waits"},
    {"bytes_sent", nullptr, &RankStepRecord::bytes_sent, "bytes", "payload bytes sent"},
    {"peak_memory_bytes", nullptr, &RankStepRecord::peak_memory_bytes, "bytes",
     "peak memory during the step"},
    {"step_cpu_s", &RankStepRecord::step_cpu_s, nullptr, "s",
     "CPU time of the rank's main thread in the step"},
    {"forward_cpu_s", &RankStepRecord::forward_cpu_s, nullptr, "s", "forward compute CPU time"},
    {"backward_cpu_s", &RankStepRecord::backward_cpu_s, nullptr, "s", "backward compute CPU time"},
    {"aux_cpu_s", &RankStepRecord::aux_cpu_s, nullptr, "s", "auxiliary head CPU time"},
    {"optimizer_cpu_s", &RankStepRecord::optimizer_cpu_s, nullptr, "s", "optimizer CPU time"},
};
inline constexpr size_t kRankStepFieldCount = std::size(kRankStepFields);

struct StepRecord {
  int step = 0;  // 0-based, warm-up steps first
  bool warmup = false;
  double step_time_s = 0.0;          // max over ranks of RankStepRecord::step_s
  double loss = 0.0;                 // the network's own loss, mean over the mini-batch
  double accuracy = 0.0;             // top-1 on the mini-batch (per token for language models)
  double learning_rate = 0.0;        // the optimiser's rate in this step (the schedule's)
  std::vector<double> aux_loss;      // per stage; NaN where the stage has no head
  std::vector<double> aux_accuracy;  // per stage; NaN where the stage has no head
  std::vector<RankStepRecord> ranks;
};

// One evaluation of the whole test split during training (TrainConfig::eval_epochs), and
// of the validation split where one is held out (TrainConfig::validation_fraction).
struct Evaluation {
  double epoch = 0.0;
  int step = 0;  // the 0-based step after which it ran
  double loss = 0.0;
  double accuracy = 0.0;
  int64_t samples = 0;
  double validation_loss = std::numeric_limits<double>::quiet_NaN();  // NaN: no split
  double validation_accuracy = std::numeric_limits<double>::quiet_NaN();
  int64_t validation_samples = 0;
};

struct TrainResult {
  std::vector<StepRecord> steps;  // warmup_steps + steps entries
  std::vector<placement::TimelineEvent> timeline;
  double measured_wall_s = 0.0;  // barrier to barrier over the measured steps
  double samples_per_s = 0.0;    // steps * batch_size / measured_wall_s
  double eval_loss = 0.0;        // NaN when eval_samples == 0
  double eval_accuracy = 0.0;    // NaN when eval_samples == 0
  int64_t eval_samples = 0;
  std::vector<Evaluation> evaluations;    // in step order
  std::vector<std::string> hosts;         // per rank
  std::vector<std::string> device_names;  // per rank ("cpu: 2 threads", "NVIDIA H200")
  // This rank's own actions as it executed them, every training step in order (not
  // gathered; evaluation not included): for tests that the runtime runs the plan's schedule.
  std::vector<placement::Action> executed_actions;
  // With TrainPlan::record_node_times: this rank's node times of every measured step.
  std::vector<NodeStepTimes> node_times;
};

// With epochs > 0 sets steps from them (the data set's training size must be known
// without reading it: dataset_train_size); checks the recipe's epoch units. Idempotent.
// The CLI and the sweep call it before a configuration's id is taken; plan_training too.
void resolve_epochs(TrainConfig& config);
// The steps per epoch of the configuration's data set and batch size (0 when the data
// set's size is not known before reading it).
int64_t config_steps_per_epoch(const TrainConfig& config);
// The schedule the configuration's pipeline runs (e2e: GPipe, which with M = 1 is one
// forward and one backward pass). Throws invalid_input for e2e with micro_batches != 1.
placement::PipelineKind config_pipeline(const TrainConfig& config);
// The auxiliary heads' options of the configuration: one place for the plan's prediction
// and the runtime's heads.
placement::AuxHeadOptions config_aux_heads(const TrainConfig& config);
// The learning rate of 0-based step `step` (warm-up steps included).
double config_learning_rate(const TrainConfig& config, int step);

// With graph_file set: reads the file and sets model, graph_digest and graph_family from it
// (throws invalid_input for a bad file). Does nothing without one.
void resolve_graph_file(TrainConfig& config);
// The graph of the configuration's network, one micro-batch: the zoo model's, or the graph
// file's rebuilt for it (refusing model options, which a graph file fixes, and a file that
// changed since resolve_graph_file). `family` gets the network's family.
placement::Graph build_config_graph(const TrainConfig& config, std::string* family = nullptr);

// Planning is two steps, each throwing invalid_input with the reason when the
// configuration cannot run. A simulate-only configuration is planned without the checks
// that only training needs (a trainable graph, the data set, memory for the run).
//   check_plan_inputs(config)  what the configuration names, checked and read once: steps
//                              from epochs, the rules that combine keys, the names parsed
//                              (parse_choices, the pipeline registry's rules), the graph
//                              built and what training needs of it, the cost model (its
//                              preset, or its profile read), the placement file read against
//                              the graph, and the host memory a rank has;
//   plan_training(inputs)      from those alone: order, placement, schedule, prediction,
//                              and the prediction's peak memory against the rank's.
// plan_config(config) is both.
struct PlanInputs {
  TrainPlan plan;  // config (resolved), family, graph, parsed choices, parameter_count
  placement::CostModel cost_model;
  std::optional<placement::Placement> placement_file;  // config.placement_path's, checked
  // What a rank may hold: its GPU, or its share of the host's memory; 0 bytes when
  // simulate-only or unknown (nothing is checked).
  placement::MemoryBudget memory;
};
PlanInputs check_plan_inputs(const TrainConfig& config);
TrainPlan plan_training(PlanInputs inputs);
TrainPlan plan_config(const TrainConfig& config);

// The node sequence of the configuration's order on its graph and cost model, as
// plan_training computes it, without placing: orders that give a graph the same sequence
// give it the same placement (docs/orders.md).
std::vector<placement::NodeId> config_node_order(const TrainConfig& config);

// The parsing step of plan_training: plan.strategy, reach, pipeline, interlock and device
// from plan.config (devices is the stage count). Throws invalid_input for an unknown name.
void parse_choices(TrainPlan& plan);
// The cost model of the configuration's device preset, or of its profile (read from its
// file, or the one the job measured: profile:auto).
placement::CostModel training_cost_model(const TrainConfig& config);
// The scheduling step of plan_training, from the parsed fields and plan.placement:
// build_schedule on a stage chain, elsewhere list_node_schedule (step_simulation.hpp) with
// `cost_model` (the plan's: training_cost_model of its configuration). Throws
// invalid_input when the placement cannot run the choice: a local or interlocking strategy,
// or the 1f1b pipeline, on a placement that is not a stage chain (1F1B interleaves
// whole-stage passes: never run as something else under its name). A test that edits a plan's
// placement or choices calls parse_choices and plan_schedule again.
void plan_schedule(TrainPlan& plan, const placement::CostModel& cost_model);

// Called on rank 0 with each step's record (all ranks' parts) while training goes on,
// in step order, once every rank has ended that step.
using StepCallback = std::function<void(const StepRecord&)>;

// Collective over comm. Throws interplace::Error on every rank when any rank fails; with
// `on_step`, rank 0 has handed on every step that all ranks finished before the failure.
// `on_step` must be given on every rank or on none (the ranks then send their records as
// they go); it is only called on rank 0.
TrainResult train(const TrainPlan& plan, MPI_Comm comm, const StepCallback& on_step = {});

}  // namespace interplace::runs
