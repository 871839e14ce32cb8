// Writing result files: the root attributes once, then one whole /configs/<id> group per
// finished configuration through copy, add, close, rename (docs/results-format.md,
// "Crash safety").
#include <chrono>
#include <filesystem>
#include <limits>

#include "hdf5_io.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/device_presets.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/results_format.hpp"

namespace interplace::runs {
namespace {

namespace fs = std::filesystem;
using h5::write_attr;
using h5::write_dataset;

std::string family_of(const std::string& model) {
  for (const placement::ModelInfo& info : placement::model_catalog()) {
    if (info.name == model) return info.family;
  }
  return "";
}

void write_parameters(hid_t g, const ConfigRecord& r) {
  const TrainConfig& c = r.config.train;
  write_attr(g, "id", r.config.id);
  write_attr(g, "index", r.config.index);
  write_attr(g, "name", c.display_name());
  write_attr(g, "model", c.model);
  write_attr(g, "family", family_of(c.model));
  write_attr(g, "order", c.order);
  write_attr(g, "placer", c.placer);
  write_attr(g, "devices", int64_t{c.devices});
  write_attr(g, "strategy", c.strategy);
  write_attr(g, "pipeline", c.pipeline);
  write_attr(g, "interlock_mode", c.interlock_mode);
  write_attr(g, "micro_batches", int64_t{c.micro_batches});
  write_attr(g, "batch_size", c.batch_size);
  write_attr(g, "warmup_steps", int64_t{c.warmup_steps});
  write_attr(g, "steps", int64_t{c.steps});
  write_attr(g, "dataset", c.dataset);
  write_attr(g, "data_dir", c.data_dir);
  write_attr(g, "eval_samples_requested", c.eval_samples);
  write_attr(g, "optimizer", placement::to_string(c.optimizer));
  write_attr(g, "learning_rate", c.learning_rate);
  write_attr(g, "weight_decay", c.weight_decay);
  write_attr(g, "seed", static_cast<int64_t>(c.seed));
  write_attr(g, "device", c.device);
  write_attr(g, "cost_device", cost_device_string(c));
  write_attr(g, "model_options", model_options_string(c.model_options));
  write_attr(g, "repeat", int64_t{r.config.repeat});
  write_attr(g, "status", r.status);
  write_attr(g, "reason", r.reason);
  write_attr(g, "started_utc", r.started_utc);
  write_attr(g, "wall_s", r.wall_s);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? "," : "") + items[i];
  return out;
}

void write_plan(hid_t g, const TrainPlan& plan) {
  std::vector<int64_t> order(plan.order.begin(), plan.order.end());
  write_dataset(g, "order", order, order.size());
  std::vector<int64_t> devices(plan.placement.device_of_node.begin(),
                               plan.placement.device_of_node.end());
  write_dataset(g, "placement", devices, devices.size());
  std::vector<std::string> names;
  for (const placement::Node& node : plan.graph.nodes()) names.push_back(node.name);
  write_dataset(g, "node_names", names);

  const StepReport& p = plan.prediction;
  const h5::Handle pred = h5::create_group(g, "prediction");
  write_attr(pred.get(), "estimator", to_string(p.estimator));
  write_attr(pred.get(), "step_time_s", p.step_time_s);
  write_attr(pred.get(), "idle_fraction", p.idle_fraction);
  write_attr(pred.get(), "fallback_reason", p.fallback_reason);
  std::vector<double> busy, idle;
  std::vector<int64_t> memory;
  for (const DeviceStep& d : p.devices) {
    busy.push_back(d.busy_s);
    idle.push_back(d.idle_s);
    memory.push_back(d.peak_memory_bytes);
  }
  write_dataset(pred.get(), "busy_s", busy, busy.size());
  write_dataset(pred.get(), "idle_s", idle, idle.size());
  write_dataset(pred.get(), "peak_memory_bytes", memory, memory.size());

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
  const DevicePreset& preset = device_preset_by_name(plan.config.cost_device);
  write_attr(g, "cost_device_preset", preset.name);
  write_attr(g, "peak_flops_per_s", preset.device.peak_flops_per_s);
}

// Per step: the network's loss and accuracy, per stage the auxiliary ones, per rank the
// time split. Missing per-stage or per-rank entries (a short vector) are NaN or 0.
void write_steps(hid_t g, const TrainResult& result, size_t k) {
  const size_t s = result.steps.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> step(s);
  std::vector<int8_t> warmup(s);
  std::vector<double> step_time(s), loss(s), accuracy(s);
  std::vector<double> aux_loss(s * k, nan), aux_accuracy(s * k, nan);
  std::vector<std::vector<double>> times(8, std::vector<double>(s * k, 0.0));
  std::vector<int64_t> bytes(s * k, 0), memory(s * k, 0);
  for (size_t i = 0; i < s; ++i) {
    const StepRecord& r = result.steps[i];
    step[i] = r.step;
    warmup[i] = r.warmup ? 1 : 0;
    step_time[i] = r.step_time_s;
    loss[i] = r.loss;
    accuracy[i] = r.accuracy;
    for (size_t j = 0; j < k; ++j) {
      if (j < r.aux_loss.size()) aux_loss[i * k + j] = r.aux_loss[j];
      if (j < r.aux_accuracy.size()) aux_accuracy[i * k + j] = r.aux_accuracy[j];
      if (j >= r.ranks.size()) continue;
      const RankStepRecord& q = r.ranks[j];
      const double values[8] = {q.step_s,      q.forward_s,   q.backward_s, q.aux_s,
                                q.optimizer_s, q.comm_wait_s, q.idle_s,     q.overhead_s};
      for (size_t t = 0; t < 8; ++t) times[t][i * k + j] = values[t];
      bytes[i * k + j] = q.bytes_sent;
      memory[i * k + j] = q.peak_memory_bytes;
    }
  }
  const h5::Handle steps = h5::create_group(g, "steps");
  write_dataset(steps.get(), "step", step, s);
  write_dataset(steps.get(), "warmup", warmup);
  write_dataset(steps.get(), "step_time_s", step_time, s);
  write_dataset(steps.get(), "loss", loss, s);
  write_dataset(steps.get(), "accuracy", accuracy, s);
  write_dataset(steps.get(), "aux_loss", aux_loss, s, k);
  write_dataset(steps.get(), "aux_accuracy", aux_accuracy, s, k);
  const h5::Handle ranks = h5::create_group(g, "ranks");
  const char* names[8] = {"step_s",      "forward_s",   "backward_s", "aux_s",
                          "optimizer_s", "comm_wait_s", "idle_s",     "overhead_s"};
  for (size_t t = 0; t < 8; ++t) write_dataset(ranks.get(), names[t], times[t], s, k);
  write_dataset(ranks.get(), "bytes_sent", bytes, s, k);
  write_dataset(ranks.get(), "peak_memory_bytes", memory, s, k);
}

void write_result(hid_t g, const TrainResult& result, size_t k) {
  write_attr(g, "measured_wall_s", result.measured_wall_s);
  write_attr(g, "samples_per_s", result.samples_per_s);
  write_attr(g, "eval_loss", result.eval_loss);
  write_attr(g, "eval_accuracy", result.eval_accuracy);
  write_attr(g, "eval_samples", result.eval_samples);
  write_attr(g, "hosts", joined(result.hosts));
  write_attr(g, "device_names", joined(result.device_names));
  write_steps(g, result, k);

  const size_t e = result.timeline.size();
  std::vector<int64_t> rank(e);
  std::vector<std::string> kind(e);
  std::vector<double> start(e), end(e);
  for (size_t i = 0; i < e; ++i) {
    rank[i] = result.timeline[i].rank;
    kind[i] = result.timeline[i].kind;
    start[i] = result.timeline[i].start_s;
    end[i] = result.timeline[i].end_s;
  }
  const h5::Handle timeline = h5::create_group(g, "timeline");
  write_dataset(timeline.get(), "rank", rank, e);
  write_dataset(timeline.get(), "kind", kind);
  write_dataset(timeline.get(), "start_s", start, e);
  write_dataset(timeline.get(), "end_s", end, e);
}

void write_record(hid_t file, const ConfigRecord& r) {
  const h5::Handle configs = h5::open_group(file, "configs");
  if (h5::exists(configs.get(), r.config.id)) {
    throw_invalid("configuration " + r.config.id + " is already in the result file");
  }
  const h5::Handle g = h5::create_group(configs.get(), r.config.id);
  write_parameters(g.get(), r);
  if (r.plan != nullptr) {
    write_attr(g.get(), "parameter_count", r.plan->parameter_count);
    write_attr(g.get(), "reach", int64_t{r.plan->reach});
    write_attr(g.get(), "global_only_reason", r.plan->global_only_reason);
    write_plan(g.get(), *r.plan);
  }
  if (r.result != nullptr) {
    write_result(g.get(), *r.result, static_cast<size_t>(r.config.train.devices));
  }
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
  write_attr(root, "world_size", p.world_size);
  write_attr(root, "slurm_job_id", p.slurm_job_id);
  write_attr(root, "slurm_array_job_id", p.slurm_array_job_id);
  write_attr(root, "slurm_array_task_id", p.slurm_array_task_id);
  write_attr(root, "shard", p.shard);
  write_attr(root, "spec_path", p.spec_path);
  write_attr(root, "spec_text", p.spec_text);
  write_attr(root, "overrides", p.overrides);
  write_attr(root, "filter", p.filter);
}

void close_file(h5::Handle& file, const std::string& path) {
  if (file.close() < 0) throw_runtime("HDF5: closing " + path + " failed");
}

void publish(const std::string& tmp, const std::string& path) {
  std::error_code error;
  fs::rename(tmp, path, error);
  if (error) throw_runtime("cannot rename " + tmp + " to " + path + ": " + error.message());
}

}  // namespace

void create_results_file(const std::string& path, const Provenance& provenance) {
  if (fs::exists(path)) {
    throw_invalid(path +
                  " exists already; results are never overwritten (use --resume to "
                  "continue it, or another --out)");
  }
  const std::string tmp = path + ".tmp";
  h5::Handle file = h5::create_file(tmp, true);
  write_provenance(file.get(), provenance);
  h5::create_group(file.get(), "configs");
  close_file(file, tmp);
  publish(tmp, path);
}

double append_config(const std::string& path, const ConfigRecord& record) {
  const auto start = std::chrono::steady_clock::now();
  const std::string tmp = path + ".tmp";
  std::error_code error;
  fs::copy_file(path, tmp, fs::copy_options::overwrite_existing, error);
  if (error) throw_runtime("cannot copy " + path + " to " + tmp + ": " + error.message());
  {
    h5::Handle file = h5::open_file(tmp, true);
    write_record(file.get(), record);
    close_file(file, tmp);
  }
  publish(tmp, path);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace interplace::runs
