// Writing result files: the root attributes once, then one whole /configs/<id> group per
// finished configuration through copy, add, close, rename (docs/results-format.md,
// "Crash safety").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <type_traits>

#include "hdf5_io.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/results_format.hpp"
#include "interplace/runs/sweep.hpp"
#include "results_summary.hpp"

namespace interplace::runs {
namespace {

namespace fs = std::filesystem;
using h5::write_attr;
using h5::write_dataset;

std::string family_of(const std::string& model) {
  try {
    return placement::find_model(model).family;
  } catch (const Error&) {
    return "";  // a result of a model no longer in the catalog
  }
}

void write_parameters(hid_t g, const ConfigRecord& r) {
  const TrainConfig& c = r.config.train;
  write_attr(g, "id", r.config.id);
  // The configuration its repeats share (the id of repeat 0), so no reader recomputes it.
  write_attr(g, "config_key", config_id(c, 0));
  write_attr(g, "index", r.config.index);
  write_attr(g, "name", c.display_name());
  write_attr(g, "family", c.graph_file.empty() ? family_of(c.model) : c.graph_family);
  // Every key of the configuration's schema, typed by its kind (config_fields.hpp).
  for (const ConfigField& f : config_fields()) {
    if (f.in_file == Presence::never || (f.in_file == Presence::when && !f.id_present(c))) {
      continue;
    }
    const FieldValue value = f.get(c);
    if (f.kind == ValueKind::integer) {
      write_attr(g, f.attribute_name(), value.integer);
    } else if (f.kind == ValueKind::number) {
      write_attr(g, f.attribute_name(), value.number);
    } else {
      write_attr(g, f.attribute_name(), value.text);
    }
  }
  // Each model option also as its own typed attribute, so a reader need not parse the
  // model_options string.
  for (const ModelOptionValue& option : model_option_values(c.model_options)) {
    const std::string name = "model_option_" + option.key;
    if (option.integer) {
      write_attr(g, name, option.int_value);
    } else {
      write_attr(g, name, option.real_value);
    }
  }
  write_attr(g, "repeat", int64_t{r.config.repeat});
  write_attr(g, "status", r.status);
  write_attr(g, "reason", r.reason);
  write_attr(g, "started_utc", r.started_utc);
  write_attr(g, "wall_s", r.wall_s);
  if (!r.profile_id.empty()) write_attr(g, "profile_id", r.profile_id);
  if (!r.same_sequence_as.empty()) write_attr(g, "same_sequence_as", r.same_sequence_as);
}

// What a dataset holds, as its `units` and `long_name` attributes (the names netCDF and
// xarray show): units are "s", "bytes" or "1" (a count, an index, a ratio, a flag).
struct Meaning {
  const char* units;
  const char* long_name;
};

void describe(hid_t dataset, const Meaning& meaning) {
  write_attr(dataset, "units", meaning.units);
  write_attr(dataset, "long_name", meaning.long_name);
}

// One named axis of a configuration's datasets: its dimension scale and length.
struct Axis {
  hid_t scale;
  size_t length;
};

// A dataset with its meaning and, per axis, the dimension scale that names it (shape
// [axes[0].length] or [axes[0].length, axes[1].length]).
template <typename T>
void variable(hid_t parent, const std::string& name, const std::vector<T>& data,
              std::initializer_list<Axis> axes, const Meaning& meaning) {
  const Axis* axis = axes.begin();
  h5::Handle set;
  if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, std::string>) {
    set = write_dataset(parent, name, data);
  } else {
    set = write_dataset(parent, name, data, axis[0].length, axes.size() > 1 ? axis[1].length : 0);
  }
  describe(set.get(), meaning);
  unsigned index = 0;
  for (const Axis& a : axes) h5::attach_scale(set.get(), a.scale, index++);
}

// The dimension scale `name` at the top of a configuration group (so that netCDF-4
// readers see it in every subgroup): the indices 0 … length-1.
h5::Handle make_axis(hid_t parent, const char* name, size_t length, const char* long_name) {
  std::vector<int64_t> values(length);
  for (size_t i = 0; i < length; ++i) values[i] = static_cast<int64_t>(i);
  h5::Handle set = write_dataset(parent, name, values, length);
  h5::make_scale(set.get(), name);
  describe(set.get(), {"1", long_name});
  return set;
}

// A `timeline` group in `parent`: one row per event (measured: the last measured step;
// predicted: the simulator's first step), with its own `event` scale.
// `measured` adds the events' CPU times (the simulator has none).
void write_timeline(hid_t parent, const std::vector<placement::TimelineEvent>& events,
                    const char* event_long_name, bool measured) {
  const size_t e = events.size();
  std::vector<int64_t> ranks(e), micro_batch(e), loss_stage(e), peer(e);
  std::vector<std::string> kind(e), action(e);
  std::vector<double> start(e), end(e), cpu(e);
  for (size_t i = 0; i < e; ++i) {
    const placement::TimelineEvent& t = events[i];
    ranks[i] = t.rank;
    kind[i] = t.kind;
    action[i] = t.action;
    micro_batch[i] = t.micro_batch;
    loss_stage[i] = t.loss_stage;
    peer[i] = t.peer;
    start[i] = t.start_s;
    end[i] = t.end_s;
    cpu[i] = t.cpu_s;
  }
  const h5::Handle timeline = h5::create_group(parent, "timeline");
  const h5::Handle event_scale = make_axis(timeline.get(), "event", e, event_long_name);
  const Axis event{event_scale.get(), e};
  variable(timeline.get(), "rank", ranks, {event}, {"1", "rank of the event"});
  variable(timeline.get(), "kind", kind, {event}, {"1", "kind of work"});
  variable(timeline.get(), "action", action, {event},
           {"1", "schedule action (F3 forward, B3/b3 backward, H3 head, r3 receive, S step)"});
  variable(timeline.get(), "micro_batch", micro_batch, {event},
           {"1", "micro-batch of the action (-1: none)"});
  variable(timeline.get(), "loss_stage", loss_stage, {event},
           {"1", "loss stage of a backward or gradient message (-1: none)"});
  variable(timeline.get(), "peer", peer, {event}, {"1", "peer rank of a message (-1: none)"});
  variable(timeline.get(), "start_s", start, {event}, {"s", "start from the rank's step start"});
  variable(timeline.get(), "end_s", end, {event}, {"s", "end from the rank's step start"});
  if (measured) {
    variable(timeline.get(), "cpu_s", cpu, {event},
             {"s", "CPU time of the rank's main thread in the interval"});
  }
}

// The rl placer's training (placer_rl): its settings' preset is the group's rl_preset.
void write_rl_log(hid_t g, const placement::RlTrainingLog& log) {
  const h5::Handle rl = h5::create_group(g, "placer_rl");
  write_attr(rl.get(), "start_step_time_s", log.start_step_time_s);
  write_attr(rl.get(), "greedy_step_time_s", log.greedy_step_time_s);
  write_attr(rl.get(), "best_final_s", log.best_final_s);
  write_attr(rl.get(), "episodes_run", int64_t{log.episodes_run});
  write_attr(rl.get(), "evaluation_episodes", int64_t{log.evaluation_episodes});
  write_attr(rl.get(), "groups", int64_t{log.groups});
  if (log.level_groups.size() > 1) {  // coarse to fine: the fine level's groups and episodes
    write_attr(rl.get(), "fine_groups", int64_t{log.level_groups.back()});
    write_attr(rl.get(), "fine_episodes_run", int64_t{log.level_episodes.back()});
  }
  const size_t e = log.episode_step_time_s.size();
  const h5::Handle episode_scale = make_axis(rl.get(), "episode", e, "episode of rl training");
  const Axis episode{episode_scale.get(), e};
  variable(rl.get(), "episode_step_time_s", log.episode_step_time_s, {episode},
           {"s", "estimated step time of the episode's final placement"});
  variable(rl.get(), "best_step_time_s", log.best_step_time_s, {episode},
           {"s", "estimated step time of the best memory-feasible placement so far"});
}

void write_plan(hid_t g, const TrainPlan& plan, const Axis& rank) {
  std::vector<int64_t> order(plan.order.begin(), plan.order.end());
  std::vector<int64_t> devices(plan.placement.device_of_node.begin(),
                               plan.placement.device_of_node.end());
  std::vector<std::string> names;
  for (const placement::Node& node : plan.graph.nodes()) names.push_back(node.name);
  const h5::Handle node_scale = make_axis(g, "node", names.size(), "node id of the model graph");
  const Axis node{node_scale.get(), names.size()};
  variable(g, "order", order, {node}, {"1", "node id at this position of the traversal order"});
  variable(g, "placement", devices, {node}, {"1", "device (rank) of the node"});
  // A simulate-only study places thousands of graphs: their node names and simulated
  // timelines would outweigh the results (the names are the model's, rebuilt by `graph`).
  const bool simulate_only = plan.config.simulate_only;
  if (!simulate_only) variable(g, "node_names", names, {node}, {"1", "node name"});
  write_attr(g, "placer_wall_s", plan.placer_wall_s);
  if (plan.rl_log) write_rl_log(g, *plan.rl_log);

  const placement::StepReport& p = plan.prediction;
  const h5::Handle pred = h5::create_group(g, "prediction");
  write_attr(pred.get(), "messages", placement::to_string(p.messages));
  write_attr(pred.get(), "step_time_s", p.step_time_s);
  write_attr(pred.get(), "idle_fraction", p.idle_fraction);
  write_attr(pred.get(), "node_level_reason", p.node_level_reason);
  std::vector<double> busy, idle;
  std::vector<int64_t> memory;
  for (const placement::DeviceStep& d : p.devices) {
    busy.push_back(d.busy_s);
    idle.push_back(d.idle_s);
    memory.push_back(d.peak_memory_bytes);
  }
  // The simulator predicts one entry per device of the placement, which is K.
  if (busy.size() != rank.length) {
    throw_runtime("the prediction has " + std::to_string(busy.size()) +
                  " devices, not K = " + std::to_string(rank.length));
  }
  variable(pred.get(), "busy_s", busy, {rank}, {"s", "predicted busy time per step"});
  variable(pred.get(), "idle_s", idle, {rank}, {"s", "predicted idle time per step"});
  variable(pred.get(), "peak_memory_bytes", memory, {rank}, {"bytes", "predicted peak memory"});
  if (!plan.prediction.timeline.empty() && !simulate_only) {
    write_timeline(pred.get(), plan.prediction.timeline, "event of the simulated first step",
                   false);
  }

  const placement::GraphStats& s = plan.graph_stats;
  const h5::Handle graph = h5::create_group(g, "graph");
  write_attr(graph.get(), "node_count", int64_t{s.node_count});
  write_attr(graph.get(), "edge_count", s.edge_count);
  write_attr(graph.get(), "depth", int64_t{s.depth});
  write_attr(graph.get(), "max_width", int64_t{s.max_width});
  write_attr(graph.get(), "mean_branching_factor", s.mean_branching_factor);
  write_attr(graph.get(), "critical_path_cost_share", s.critical_path_cost_share);
  // Model FLOPs of one micro-batch (the graph's batch), for the analysis' MFU.
  write_attr(graph.get(), "forward_flops", plan.graph.total_forward_flops());
  write_attr(graph.get(), "backward_flops", plan.graph.total_backward_flops());
  write_attr(graph.get(), "batch_size", plan.graph.batch_size());
  // The cost device preset's peak (its name: cost_device_preset), the MFU's denominator;
  // a profile replaces the preset's times but not its peak, so the name is kept apart.
  const placement::DevicePreset& preset = placement::device_preset_by_name(plan.config.cost_device);
  write_attr(g, "cost_device_preset", preset.name);
  write_attr(g, "peak_flops_per_s", preset.device.peak_flops_per_s);
}

// Per step: the network's loss and accuracy, per stage the auxiliary ones, per rank the
// time split. Missing per-stage or per-rank entries (a short vector) are NaN or 0.
void write_steps(hid_t g, const TrainResult& result, const Axis& rank, const Axis& stage) {
  const size_t s = result.steps.size();
  const size_t k = rank.length;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> step(s);
  std::vector<int8_t> warmup(s);
  std::vector<double> step_time(s), loss(s), accuracy(s), learning_rate(s);
  // Per stage: K of the K x R ranks (the first replica's; every replica has the same
  // stages).
  const size_t stages = stage.length;
  std::vector<double> aux_loss(s * stages, nan), aux_accuracy(s * stages, nan);
  // Per column of kRankStepFields: [step, rank] row-major.
  std::vector<std::vector<double>> columns(kRankStepFieldCount, std::vector<double>(s * k, 0.0));
  for (size_t i = 0; i < s; ++i) {
    const StepRecord& r = result.steps[i];
    step[i] = r.step;
    warmup[i] = r.warmup ? 1 : 0;
    step_time[i] = r.step_time_s;
    loss[i] = r.loss;
    accuracy[i] = r.accuracy;
    learning_rate[i] = r.learning_rate;
    for (size_t j = 0; j < stages; ++j) {
      if (j < r.aux_loss.size()) aux_loss[i * stages + j] = r.aux_loss[j];
      if (j < r.aux_accuracy.size()) aux_accuracy[i * stages + j] = r.aux_accuracy[j];
    }
    for (size_t j = 0; j < std::min(k, r.ranks.size()); ++j) {
      for (size_t c = 0; c < kRankStepFieldCount; ++c) {
        columns[c][i * k + j] = kRankStepFields[c].value(r.ranks[j]);
      }
    }
  }
  const h5::Handle step_scale = make_axis(g, "step", s, "step (warm-up and measured)");
  const Axis at{step_scale.get(), s};
  const h5::Handle steps = h5::create_group(g, "steps");
  variable(steps.get(), "step", step, {at}, {"1", "step"});
  variable(steps.get(), "warmup", warmup, {at}, {"1", "1 for a warm-up step"});
  variable(steps.get(), "step_time_s", step_time, {at}, {"s", "step time (max over ranks)"});
  variable(steps.get(), "loss", loss, {at}, {"1", "training loss of the mini-batch"});
  variable(steps.get(), "accuracy", accuracy, {at}, {"1", "top-1 accuracy of the mini-batch"});
  variable(steps.get(), "learning_rate", learning_rate, {at},
           {"1", "learning rate of the optimiser step"});
  variable(steps.get(), "aux_loss", aux_loss, {at, stage}, {"1", "auxiliary head loss per stage"});
  variable(steps.get(), "aux_accuracy", aux_accuracy, {at, stage},
           {"1", "auxiliary head accuracy per stage"});
  const h5::Handle ranks = h5::create_group(g, "ranks");
  // Times as float, byte counts as int64 (docs/results-format.md).
  for (size_t c = 0; c < kRankStepFieldCount; ++c) {
    const RankStepField& field = kRankStepFields[c];
    const Meaning meaning{field.units, field.long_name};
    if (field.count != nullptr) {
      const std::vector<int64_t> counts(columns[c].begin(), columns[c].end());
      variable(ranks.get(), field.name, counts, {at, rank}, meaning);
    } else {
      variable(ranks.get(), field.name, columns[c], {at, rank}, meaning);
    }
  }
}

// The whole-test-split evaluations during training (eval_epochs), one row each; absent
// when the configuration asked for none.
void write_evaluations(hid_t g, const TrainResult& result) {
  const size_t n = result.evaluations.size();
  if (n == 0) return;
  std::vector<double> epoch(n), loss(n), accuracy(n);
  std::vector<int64_t> step(n), samples(n);
  for (size_t i = 0; i < n; ++i) {
    const Evaluation& e = result.evaluations[i];
    epoch[i] = e.epoch;
    step[i] = e.step;
    loss[i] = e.loss;
    accuracy[i] = e.accuracy;
    samples[i] = e.samples;
  }
  const h5::Handle group = h5::create_group(g, "evaluations");
  const h5::Handle scale =
      make_axis(group.get(), "evaluation", n, "evaluation of the test split during training");
  const Axis at{scale.get(), n};
  variable(group.get(), "epoch", epoch, {at}, {"1", "epochs trained before the evaluation"});
  variable(group.get(), "step", step, {at}, {"1", "step after which it ran (0-based)"});
  variable(group.get(), "loss", loss, {at}, {"1", "test loss (mean over the test split)"});
  variable(group.get(), "accuracy", accuracy, {at}, {"1", "top-1 test accuracy"});
  variable(group.get(), "samples", samples, {at}, {"1", "test samples evaluated"});
  if (result.evaluations.front().validation_samples == 0) return;  // no validation split
  std::vector<double> validation_loss(n), validation_accuracy(n);
  std::vector<int64_t> validation_samples(n);
  for (size_t i = 0; i < n; ++i) {
    const Evaluation& e = result.evaluations[i];
    validation_loss[i] = e.validation_loss;
    validation_accuracy[i] = e.validation_accuracy;
    validation_samples[i] = e.validation_samples;
  }
  variable(group.get(), "validation_loss", validation_loss, {at},
           {"1", "validation loss (mean over the validation split)"});
  variable(group.get(), "validation_accuracy", validation_accuracy, {at},
           {"1", "top-1 validation accuracy"});
  variable(group.get(), "validation_samples", validation_samples, {at},
           {"1", "validation samples evaluated"});
}

void write_result(hid_t g, const TrainResult& result, const Axis& rank, const Axis& stage) {
  write_attr(g, "measured_wall_s", result.measured_wall_s);
  write_attr(g, "samples_per_s", result.samples_per_s);
  write_attr(g, "eval_loss", result.eval_loss);
  write_attr(g, "eval_accuracy", result.eval_accuracy);
  write_attr(g, "eval_samples", result.eval_samples);
  write_attr(g, "hosts", result.hosts);
  write_attr(g, "device_names", result.device_names);
  write_steps(g, result, rank, stage);
  write_evaluations(g, result);

  write_timeline(g, result.timeline, "event of the last measured step", true);
}

void write_record(hid_t file, const ConfigRecord& r) {
  const h5::Handle configs = h5::open_group(file, "configs");
  if (h5::exists(configs.get(), r.config.id)) {
    throw_invalid("configuration " + r.config.id + " is already in the result file");
  }
  const h5::Handle g = h5::create_group(configs.get(), r.config.id);
  write_parameters(g.get(), r);
  if (r.plan == nullptr && r.result == nullptr) return;
  const size_t k = static_cast<size_t>(r.config.train.devices);
  const size_t replicas = static_cast<size_t>(std::max(1, r.config.train.data_parallel));
  // One replica: rank = stage, one axis. Data parallelism: the K x R ranks (rank = replica
  // * K + stage) on `rank`, and per-stage data (prediction, auxiliary losses) on `stage`.
  const h5::Handle rank_scale =
      make_axis(g.get(), "rank", k * replicas,
                replicas == 1 ? "rank (pipeline stage, device)"
                              : "rank (replica x stages + stage: data parallelism)");
  const Axis rank{rank_scale.get(), k * replicas};
  h5::Handle stage_scale;
  if (replicas > 1) stage_scale = make_axis(g.get(), "stage", k, "pipeline stage (device)");
  const Axis stage = replicas > 1 ? Axis{stage_scale.get(), k} : rank;
  if (replicas > 1) {
    std::vector<int64_t> stage_of(k * replicas), replica_of(k * replicas);
    for (size_t i = 0; i < k * replicas; ++i) {
      stage_of[i] = static_cast<int64_t>(i % k);
      replica_of[i] = static_cast<int64_t>(i / k);
    }
    variable(g.get(), "rank_stage", stage_of, {rank}, {"1", "pipeline stage of the rank"});
    variable(g.get(), "rank_replica", replica_of, {rank},
             {"1", "data-parallel replica of the rank"});
  }
  if (r.plan != nullptr) {
    write_attr(g.get(), "parameter_count", r.plan->parameter_count);
    write_attr(g.get(), "reach", int64_t{r.plan->reach});
    write_attr(g.get(), "global_only_reason", r.plan->global_only_reason);
    write_plan(g.get(), *r.plan, stage);
  }
  if (r.result != nullptr) write_result(g.get(), *r.result, rank, stage);
}

// The overrides, one per line in Provenance, as the list the file stores.
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void write_provenance(hid_t root, const Provenance& p) {
  write_attr(root, "format_name", kResultsFormatName);
  write_attr(root, "format_version", kResultsFormatVersion);
  write_attr(root, "created_utc", p.created_utc);
  write_attr(root, "interplace_version", p.interplace_version);
  write_attr(root, "git_commit", p.git_commit);
  write_attr(root, "mpi_version", p.mpi_version);
  write_attr(root, "hdf5_version", p.hdf5_version);
  write_attr(root, "onednn_version", p.onednn_version);
  write_attr(root, "cuda_runtime_version", p.cuda_runtime_version);
  write_attr(root, "cuda_driver_version", p.cuda_driver_version);
  write_attr(root, "cudnn_version", p.cudnn_version);
  write_attr(root, "hosts", p.hosts);
  write_attr(root, "devices", p.devices);
  write_attr(root, "node_local_ranks", p.node_local_ranks);
  write_attr(root, "world_size", p.world_size);
  write_attr(root, "slurm_job_id", p.slurm_job_id);
  write_attr(root, "slurm_array_job_id", p.slurm_array_job_id);
  write_attr(root, "slurm_array_task_id", p.slurm_array_task_id);
  write_attr(root, "shard", p.shard);
  // The same as two integers, so that readers need not parse "i/n".
  const Shard shard = parse_shard(p.shard);
  write_attr(root, "shard_index", int64_t{shard.index});
  write_attr(root, "shard_count", int64_t{shard.count});
  write_attr(root, "spec_path", p.spec_path);
  write_attr(root, "spec_text", p.spec_text);
  write_attr(root, "overrides", lines(p.overrides));
  write_attr(root, "filter", p.filter);
  // The configuration schema of this interplace (`interplace schema`): the analysis takes
  // the parameter names and the pipelines from it instead of keeping copies.
  write_attr(root, "schema", schema_json());
}

}  // namespace

void create_results_file(const std::string& path, const Provenance& provenance) {
  if (fs::exists(path)) {
    throw_invalid(path +
                  " exists already; results are never overwritten (use --resume to "
                  "continue it, or another --out)");
  }
  h5::MemoryFile file = h5::MemoryFile::create();
  write_provenance(file.get(), provenance);
  h5::create_index_group(file.get(), "configs");
  create_summary(file.get());
  file.save(path);
}

void append_profile(const std::string& path, const StoredProfile& profile) {
  h5::MemoryFile file = h5::MemoryFile::load(path);
  const h5::Handle profiles = h5::exists(file.get(), "profiles")
                                  ? h5::open_group(file.get(), "profiles")
                                  : h5::create_group(file.get(), "profiles");
  if (h5::exists(profiles.get(), profile.name)) {
    throw_invalid(path + " holds profile " + profile.name + " already");
  }
  const h5::Handle g = h5::create_group(profiles.get(), profile.name);
  write_attr(g.get(), "key", profile.key);
  write_attr(g.get(), "profile", profile.text);
  write_attr(g.get(), "measured_utc", profile.measured_utc);
  write_attr(g.get(), "measure_s", profile.measure_s);
  file.save(path);
}

namespace {

// What a fold may add beyond the entries' groups: the summary rows and the growth of the
// file's indexes.
constexpr uint64_t kFoldReserveBytes = uint64_t{8} << 20;

std::string journal_dir(const std::string& path) {
  return path + ".journal";
}

AppendPolicy& policy_store() {
  static AppendPolicy policy = [] {
    AppendPolicy p;
    if (const char* from = std::getenv("INTERPLACE_JOURNAL_FROM_BYTES")) {
      p.journal_from_bytes = std::strtoull(from, nullptr, 10);
    }
    if (const char* fraction = std::getenv("INTERPLACE_JOURNAL_FOLD_FRACTION")) {
      const double value = std::strtod(fraction, nullptr);
      if (value > 0.0) p.fold_fraction = value;
    }
    return p;
  }();
  return policy;
}

// What this process knows of a file's journal, so that an append need not list it:
// valid while `path` keeps the size it had (only this process writes it).
struct JournalState {
  uintmax_t file_bytes = 0;
  uintmax_t journal_bytes = 0;
  int64_t next = 0;
  std::set<std::string> ids;  // configurations in the entries
};
std::map<std::string, JournalState>& journal_states() {
  static std::map<std::string, JournalState> states;
  return states;
}

// The entry number of `name` (`<seq>.h5`), or -1 for anything else (a `.tmp` of a killed
// write among them).
int64_t entry_number(const std::string& name) {
  if (name.size() <= 3 || name.substr(name.size() - 3) != ".h5") return -1;
  const std::string digits = name.substr(0, name.size() - 3);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

std::vector<std::string> entry_ids(const std::string& entry) {
  const h5::Handle file = h5::open_file(entry, false);
  const h5::Handle configs = h5::open_group(file.get(), "configs");
  return h5::child_names(configs.get());
}

JournalState& journal_state(const std::string& path) {
  std::error_code error;
  const uintmax_t size = fs::file_size(path, error);
  if (error) throw_runtime("cannot read " + path + ": " + error.message());
  auto found = journal_states().find(path);
  if (found != journal_states().end() && found->second.file_bytes == size) return found->second;
  JournalState state;
  state.file_bytes = size;
  for (const std::string& entry : journal_entries(path)) {
    state.journal_bytes += fs::file_size(entry);
    state.next = std::max(state.next, entry_number(fs::path(entry).filename().string()) + 1);
    for (std::string& id : entry_ids(entry)) state.ids.insert(std::move(id));
  }
  return journal_states()[path] = std::move(state);
}

// Appends `records` to `file` (a copy in memory) with their summary rows.
void add_records(hid_t file, std::span<const ConfigRecord> records) {
  // A file from before the summary table gets one first (from its groups), so that the
  // table always describes every group.
  ensure_summary(file);
  std::vector<SummaryRow> rows;
  const h5::Handle configs = h5::open_group(file, "configs");
  for (const ConfigRecord& record : records) {
    write_record(file, record);
    // Read back from the group just written: the row says what the group says.
    rows.push_back(summarize_config(configs.get(), record.config.id));
  }
  append_summary(file, rows);
}

void save_or_explain(h5::MemoryFile& file, const std::string& path, const std::string& target) {
  try {
    file.save(target);
  } catch (const Error& e) {
    std::string what = e.what();
    // The error names the result file, whichever file of it was being written.
    if (target != path) {
      const std::string prefix = "cannot write " + target + ": ";
      if (what.rfind(prefix, 0) == 0)
        what = "cannot write " + path + ": " + what.substr(prefix.size());
    }
    throw_runtime(what + "; the file keeps every configuration finished before this one. " +
                  "HINT: free space (or choose another --out), then rerun with --resume");
  }
}

}  // namespace

AppendPolicy append_policy() {
  return policy_store();
}
void set_append_policy(const AppendPolicy& policy) {
  policy_store() = policy;
}
uint64_t results_bytes_written() {
  return h5::MemoryFile::bytes_saved();
}

std::vector<std::string> journal_entries(const std::string& path) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(journal_dir(path), error)) {
    const int64_t number = entry_number(e.path().filename().string());
    if (number >= 0) found.emplace_back(number, e.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

void copy_journal_configs(const std::vector<std::string>& entries, hid_t configs,
                          std::vector<SummaryRow>& rows) {
  for (const std::string& entry : entries) {
    const h5::Handle in = h5::open_file(entry, false);
    const h5::Handle in_configs = h5::open_group(in.get(), "configs");
    for (const std::string& id : h5::child_names(in_configs.get())) {
      if (h5::exists(configs, id)) continue;
      h5::copy_group(in_configs.get(), configs, id);
      rows.push_back(summarize_config(configs, id));
    }
  }
}

int64_t fold_journal(const std::string& path) {
  const std::vector<std::string> entries = journal_entries(path);
  int64_t added = 0;
  if (!entries.empty()) {
    // The file is copied on the disk and the entries added to the copy by HDF5 (never the
    // whole file in memory); what HDF5 adds is about the entries' bytes, reserved twice over.
    uint64_t entry_bytes = 0;
    for (const std::string& entry : entries) entry_bytes += fs::file_size(entry);
    std::vector<SummaryRow> rows;
    try {
      h5::DiskFile file = h5::DiskFile::copy_of(path, 2 * entry_bytes + kFoldReserveBytes);
      ensure_summary(file.get());
      copy_journal_configs(entries, h5::open_group(file.get(), "configs").get(), rows);
      append_summary(file.get(), rows);
      file.commit();
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("cannot write " + path + ": ", 0) != 0) throw;
      throw_runtime(what + "; the fold of its journal stopped, and the file and the journal " +
                    "keep every configuration. HINT: free space, then run `interplace fold " +
                    path + "` (or the sweep again with --resume)");
    }
    added = static_cast<int64_t>(rows.size());
    for (const std::string& entry : entries) fs::remove(entry);
  }
  std::error_code error;
  const fs::path dir = journal_dir(path);
  if (fs::exists(dir, error)) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, error)) {
      fs::remove(e.path(), error);  // stale .tmp files of killed writes
    }
    fs::remove(dir, error);
  }
  journal_states().erase(path);
  return added;
}

double append_config(const std::string& path, const ConfigRecord& record) {
  return append_configs(path, {&record, 1});
}

double append_configs(const std::string& path, std::span<const ConfigRecord> records) {
  const auto start = std::chrono::steady_clock::now();
  const AppendPolicy policy = append_policy();
  JournalState& state = journal_state(path);
  if (state.file_bytes < policy.journal_from_bytes && state.ids.empty()) {
    // A small file: rewritten whole (the copy costs less than a journal's bookkeeping).
    h5::MemoryFile file = h5::MemoryFile::load(path);
    add_records(file.get(), records);
    save_or_explain(file, path, path);
    journal_states().erase(path);
  } else {
    {
      // Present already: in the file or in an entry.
      const h5::Handle main = h5::open_file(path, false);
      const h5::Handle configs = h5::open_group(main.get(), "configs");
      for (const ConfigRecord& record : records) {
        if (h5::exists(configs.get(), record.config.id) || state.ids.count(record.config.id)) {
          throw_invalid("configuration " + record.config.id + " is already in the result file");
        }
      }
    }
    // One entry: a result file of its own holding the groups (no summary: the fold computes
    // the rows from the groups).
    h5::MemoryFile entry = h5::MemoryFile::create();
    h5::create_group(entry.get(), "configs");
    for (const ConfigRecord& record : records) write_record(entry.get(), record);
    std::error_code error;
    fs::create_directories(journal_dir(path), error);
    if (error)
      throw_runtime("cannot write " + path + ": creating " + journal_dir(path) + ": " +
                    error.message());
    char name[32];
    std::snprintf(name, sizeof name, "%010lld.h5", static_cast<long long>(state.next));
    const std::string entry_path = journal_dir(path) + "/" + name;
    save_or_explain(entry, path, entry_path);
    ++state.next;
    state.journal_bytes += fs::file_size(entry_path);
    for (const ConfigRecord& record : records) state.ids.insert(record.config.id);
    if (static_cast<double>(state.journal_bytes) >=
        policy.fold_fraction * static_cast<double>(state.file_bytes)) {
      fold_journal(path);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace interplace::runs
