// Order-study files (docs/results-format.md, "Order-study files"): what `interplace
// order-study` learned, per model x devices x traversal order x seed, with the rl placer's
// learning curve, the heuristic baselines and the graphs' structural features. Columnar:
// one row per run along the dimension `run`, so that xarray opens the file as one table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace interplace::runs {

inline constexpr const char* kOrderStudyFormatName = "interplace-order-study";
inline constexpr int64_t kOrderStudyFormatVersion = 1;

// One graph of the study and its structural features (placement/graph_stats.hpp).
struct OrderStudyModel {
  std::string name;
  std::string family;
  int64_t node_count = 0;
  int64_t edge_count = 0;
  int64_t depth = 0;
  int64_t max_width = 0;
  double mean_branching_factor = 0.0;
  double critical_path_cost_share = 0.0;
  int64_t parameter_count = 0;
  // The requested orders that give this graph the node sequence of an earlier one
  // ("dfs-post=topo-lifo-rev"): not run, each distinct sequence counted once.
  std::vector<std::string> same_orders;
  int64_t distinct_orders = 0;  // of the requested orders, on this graph
};

// One rl placement: a model on `devices` devices, visiting nodes in `order`, from `seed`.
struct OrderStudyRun {
  std::string model;
  std::string order;
  int64_t devices = 0;
  int64_t seed = 0;
  std::string status;               // ok | failed
  std::string reason;               // empty when ok
  double step_time_s = 0.0;         // simulated step time of the returned placement
  double start_step_time_s = 0.0;   // of the episodes' starting placement
  double greedy_step_time_s = 0.0;  // the trained policy played greedily
  double placer_wall_s = 0.0;
  int64_t episodes_run = 0;
  std::vector<double> episode_step_time_s;  // per episode: its final placement
  std::vector<double> best_so_far_step_time_s;
};

// A heuristic placer's simulated step time on one model x devices x order, for scale.
struct OrderStudyBaseline {
  std::string model;
  std::string order;
  int64_t devices = 0;
  std::string placer;
  double step_time_s = 0.0;  // NaN when the placer failed
  std::string reason;        // why it failed; empty otherwise
};

// The settings every run shares, stored as root attributes.
struct OrderStudySetup {
  std::string created_utc;
  std::string interplace_version;
  std::string git_commit;
  std::string command_line;  // argv joined by spaces, to rerun the study
  std::string cost_device;   // a device preset name or profile:<path>
  int64_t batch_size = 0;
  int64_t micro_batches = 0;
  std::string optimizer;
  int64_t rl_episodes = 0;
  int64_t rl_rounds = 0;
  int64_t rl_hidden = 0;
  int64_t rl_groups = 0;  // 0: never grouped; graphs of more nodes were placed as groups
  double rl_learning_rate = 0.0;
  double rl_final_learning_rate = 0.0;
  double rl_entropy = 0.0;
  double rl_memory_penalty = 0.0;
  double rl_time_budget_s = 0.0;
  std::string rl_start;
  std::string rl_episode_start;  // the rl option names (docs/cli.md, "order-study")
  std::string rl_reward;
  std::string rl_baseline;
  std::string rl_entropy_schedule;
  int64_t rl_eval_every = 0;
  double rl_clip_norm = 0.0;
  std::string rl_features;
  double rl_candidate_learning_rate = 0.0;
  double rl_discount = 0.0;
  std::string preset;  // --preset, or empty
};

// Writes the whole file through `path.tmp` and a rename, so that a file at `path` is always
// complete; replaces an earlier version of the same study (the command calls it after each
// model). Throws runtime_error on HDF5 failures.
void write_order_study_file(const std::string& path, const OrderStudySetup& setup,
                            const std::vector<OrderStudyModel>& models,
                            const std::vector<OrderStudyRun>& runs,
                            const std::vector<OrderStudyBaseline>& baselines);

// The commit and version the binary was built from (as the sweep's result files record).
std::string build_git_commit();
std::string build_version();

}  // namespace interplace::runs
