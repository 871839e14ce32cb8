// Writing order-study files (docs/results-format.md, "Order-study files"): three groups of
// columns, each with the dimension scale that names its rows, written whole through a
// temporary file and a rename.
#include "interplace/runs/order_study_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "hdf5_io.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::runs {
namespace {

using h5::write_attr;

struct Meaning {
  const char* units;  // "s" or "1" (a count, an index, a ratio, a name)
  const char* long_name;
};

void describe(hid_t dataset, const Meaning& meaning) {
  write_attr(dataset, "units", meaning.units);
  write_attr(dataset, "long_name", meaning.long_name);
}

// The dimension scale `name` of a group: the indices 0 ... length-1.
h5::Handle make_axis(hid_t parent, const char* name, size_t length, const char* long_name) {
  std::vector<int64_t> values(length);
  for (size_t i = 0; i < length; ++i) values[i] = static_cast<int64_t>(i);
  h5::Handle set = h5::write_dataset(parent, name, values, length);
  h5::make_scale(set.get(), name);
  describe(set.get(), {"1", long_name});
  return set;
}

// A column along `rows` (or a [rows, cols] matrix along rows and `cols_scale`).
template <typename T>
void column(hid_t parent, const std::string& name, const std::vector<T>& data, hid_t rows,
            const Meaning& meaning, size_t cols = 0, hid_t cols_scale = H5I_INVALID_HID) {
  h5::Handle set;
  if constexpr (std::is_same_v<T, std::string>) {
    set = h5::write_dataset(parent, name, data);
  } else {
    set = h5::write_dataset(parent, name, data, cols > 0 ? data.size() / cols : data.size(), cols);
  }
  describe(set.get(), meaning);
  h5::attach_scale(set.get(), rows, 0);
  if (cols > 0) h5::attach_scale(set.get(), cols_scale, 1);
}

// The column of field `f` of every row.
template <typename Row, typename F>
auto pick(const std::vector<Row>& rows, F f) {
  using T = std::decay_t<decltype(f(rows.front()))>;
  std::vector<T> out;
  out.reserve(rows.size());
  for (const Row& row : rows) out.push_back(f(row));
  return out;
}

void write_setup(hid_t root, const OrderStudySetup& s) {
  write_attr(root, "format_name", kOrderStudyFormatName);
  write_attr(root, "format_version", kOrderStudyFormatVersion);
  write_attr(root, "created_utc", s.created_utc);
  write_attr(root, "interplace_version", s.interplace_version);
  write_attr(root, "git_commit", s.git_commit);
  write_attr(root, "command_line", s.command_line);
  write_attr(root, "cost_device", s.cost_device);
  write_attr(root, "batch_size", s.batch_size);
  write_attr(root, "micro_batches", s.micro_batches);
  write_attr(root, "optimizer", s.optimizer);
  write_attr(root, "placer", "rl");
  write_attr(root, "rl_episodes", s.rl_episodes);
  write_attr(root, "rl_rounds", s.rl_rounds);
  write_attr(root, "rl_hidden", s.rl_hidden);
  write_attr(root, "rl_groups", s.rl_groups);
  write_attr(root, "rl_learning_rate", s.rl_learning_rate);
  write_attr(root, "rl_final_learning_rate", s.rl_final_learning_rate);
  write_attr(root, "rl_entropy", s.rl_entropy);
  write_attr(root, "rl_memory_penalty", s.rl_memory_penalty);
  write_attr(root, "rl_time_budget_s", s.rl_time_budget_s);
  write_attr(root, "rl_start", s.rl_start);
  write_attr(root, "rl_episode_start", s.rl_episode_start);
  write_attr(root, "rl_reward", s.rl_reward);
  write_attr(root, "rl_baseline", s.rl_baseline);
  write_attr(root, "rl_entropy_schedule", s.rl_entropy_schedule);
  write_attr(root, "rl_eval_every", s.rl_eval_every);
  write_attr(root, "rl_clip_norm", s.rl_clip_norm);
  write_attr(root, "rl_features", s.rl_features);
  write_attr(root, "rl_candidate_learning_rate", s.rl_candidate_learning_rate);
  write_attr(root, "rl_discount", s.rl_discount);
  write_attr(root, "preset", s.preset);
}

void write_models(hid_t root, const std::vector<OrderStudyModel>& models) {
  const h5::Handle g = h5::create_group(root, "models");
  const h5::Handle axis = make_axis(g.get(), "model", models.size(), "graph of the study");
  const hid_t m = axis.get();
  using M = OrderStudyModel;
  column(g.get(), "name", pick(models, [](const M& r) { return r.name; }), m,
         {"1", "zoo model name"});
  column(g.get(), "family", pick(models, [](const M& r) { return r.family; }), m,
         {"1", "model family"});
  column(g.get(), "node_count", pick(models, [](const M& r) { return r.node_count; }), m,
         {"1", "nodes of the graph"});
  column(g.get(), "edge_count", pick(models, [](const M& r) { return r.edge_count; }), m,
         {"1", "edges of the graph"});
  column(g.get(), "depth", pick(models, [](const M& r) { return r.depth; }), m,
         {"1", "nodes on the longest path"});
  column(g.get(), "max_width", pick(models, [](const M& r) { return r.max_width; }), m,
         {"1", "most nodes on one depth level"});
  column(g.get(), "mean_branching_factor",
         pick(models, [](const M& r) { return r.mean_branching_factor; }), m,
         {"1", "mean out-degree of nodes with successors"});
  column(g.get(), "critical_path_cost_share",
         pick(models, [](const M& r) { return r.critical_path_cost_share; }), m,
         {"1", "forward+backward FLOPs of the costliest path over all FLOPs"});
  column(g.get(), "parameter_count", pick(models, [](const M& r) { return r.parameter_count; }), m,
         {"1", "trainable parameters"});
  column(g.get(), "distinct_orders", pick(models, [](const M& r) { return r.distinct_orders; }), m,
         {"1", "requested orders with distinct node sequences on this graph"});
  column(g.get(), "same_orders",
         pick(models,
              [](const M& r) {
                std::string text;
                for (const std::string& s : r.same_orders) text += (text.empty() ? "" : ",") + s;
                return text;
              }),
         m, {"1", "orders not run: order=the earlier order whose sequence it repeats"});
}

void write_runs(hid_t root, const std::vector<OrderStudyRun>& runs) {
  const h5::Handle g = h5::create_group(root, "runs");
  size_t episodes = 0;
  for (const OrderStudyRun& r : runs) episodes = std::max(episodes, r.episode_step_time_s.size());
  const h5::Handle run_axis = make_axis(g.get(), "run", runs.size(), "rl placement run");
  const h5::Handle episode_axis =
      make_axis(g.get(), "episode", episodes, "training episode of the rl placer");
  const hid_t r = run_axis.get();
  using R = OrderStudyRun;
  column(g.get(), "model", pick(runs, [](const R& x) { return x.model; }), r,
         {"1", "zoo model name"});
  column(g.get(), "order", pick(runs, [](const R& x) { return x.order; }), r,
         {"1", "traversal order the placer visits nodes in"});
  column(g.get(), "devices", pick(runs, [](const R& x) { return x.devices; }), r,
         {"1", "devices placed on"});
  column(g.get(), "seed", pick(runs, [](const R& x) { return x.seed; }), r,
         {"1", "seed of the start placement and the policy"});
  column(g.get(), "status", pick(runs, [](const R& x) { return x.status; }), r,
         {"1", "ok or failed"});
  column(g.get(), "reason", pick(runs, [](const R& x) { return x.reason; }), r,
         {"1", "why the run failed (empty when ok)"});
  column(g.get(), "step_time_s", pick(runs, [](const R& x) { return x.step_time_s; }), r,
         {"s", "simulated step time of the learned placement"});
  column(g.get(), "start_step_time_s", pick(runs, [](const R& x) { return x.start_step_time_s; }),
         r, {"s", "simulated step time of the episodes' start placement"});
  column(g.get(), "greedy_step_time_s", pick(runs, [](const R& x) { return x.greedy_step_time_s; }),
         r, {"s", "simulated step time of the trained policy played greedily"});
  column(g.get(), "placer_wall_s", pick(runs, [](const R& x) { return x.placer_wall_s; }), r,
         {"s", "wall time of the rl placer (training included)"});
  column(g.get(), "episodes_run", pick(runs, [](const R& x) { return x.episodes_run; }), r,
         {"1", "training episodes run"});
  // [run, episode], NaN after a run's last episode (a time budget stops runs unequally).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> curve(runs.size() * episodes, nan);
  std::vector<double> best(runs.size() * episodes, nan);
  for (size_t i = 0; i < runs.size(); ++i) {
    std::copy(runs[i].episode_step_time_s.begin(), runs[i].episode_step_time_s.end(),
              curve.begin() + static_cast<std::ptrdiff_t>(i * episodes));
    std::copy(runs[i].best_so_far_step_time_s.begin(), runs[i].best_so_far_step_time_s.end(),
              best.begin() + static_cast<std::ptrdiff_t>(i * episodes));
  }
  if (episodes > 0) {
    column(g.get(), "episode_step_time_s", curve, r,
           {"s", "simulated step time of the episode's final placement"}, episodes,
           episode_axis.get());
    column(g.get(), "best_so_far_step_time_s", best, r,
           {"s", "simulated step time of the best memory-feasible placement so far"}, episodes,
           episode_axis.get());
  }
}

void write_baselines(hid_t root, const std::vector<OrderStudyBaseline>& rows) {
  const h5::Handle g = h5::create_group(root, "baselines");
  const h5::Handle axis =
      make_axis(g.get(), "baseline", rows.size(), "heuristic placement for scale");
  const hid_t b = axis.get();
  using B = OrderStudyBaseline;
  column(g.get(), "model", pick(rows, [](const B& x) { return x.model; }), b,
         {"1", "zoo model name"});
  column(g.get(), "order", pick(rows, [](const B& x) { return x.order; }), b,
         {"1", "traversal order given to the placer"});
  column(g.get(), "devices", pick(rows, [](const B& x) { return x.devices; }), b,
         {"1", "devices placed on"});
  column(g.get(), "placer", pick(rows, [](const B& x) { return x.placer; }), b,
         {"1", "heuristic placer"});
  column(g.get(), "step_time_s", pick(rows, [](const B& x) { return x.step_time_s; }), b,
         {"s", "simulated step time of the placement (NaN: the placer failed)"});
  column(g.get(), "reason", pick(rows, [](const B& x) { return x.reason; }), b,
         {"1", "why the placer failed (empty otherwise)"});
}

}  // namespace

void write_order_study_file(const std::string& path, const OrderStudySetup& setup,
                            const std::vector<OrderStudyModel>& models,
                            const std::vector<OrderStudyRun>& runs,
                            const std::vector<OrderStudyBaseline>& baselines) {
  h5::MemoryFile file = h5::MemoryFile::create();  // on disk by save() alone (hdf5_io.hpp)
  write_setup(file.get(), setup);
  write_models(file.get(), models);
  write_runs(file.get(), runs);
  write_baselines(file.get(), baselines);
  file.save(path);
}

}  // namespace interplace::runs
