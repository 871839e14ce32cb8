// interplace order-study: the traversal-order study's experiment (issue 18; docs/cli.md,
// "order-study"). For every model x device count x traversal order x seed it trains the rl
// placer against the simulator and keeps the learned placement's simulated step time, its
// learning curve and the placer's wall time, beside heuristic placers for scale and the
// graphs' structural features, in an order-study file (docs/results-format.md).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "device_options.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/graph_stats.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/step_simulation.hpp"
#include "interplace/runs/order_study_file.hpp"
#include "interplace/runs/results_file.hpp"
#include "json_writer.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

// The six orders the study's code runs (run_experiments.py: alpha, topo, reversed_topo,
// dfs_preorder, dfs_postorder, bfs), under this suite's names (docs/orders.md, docs/placers.md).
const std::vector<std::string> kStudyOrders = {"lexical", "topo-lifo", "topo-lifo-rev",
                                               "dfs-pre", "dfs-post",  "bfs-by-name"};
const std::vector<std::string> kFormats = {"text", "json"};

// A preset: option values as they would be given on the command line, applied to every
// option the command line does not give (an explicit option wins over the preset).
struct Preset {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;
};

// wang2022: the traversal-order study as its code ran it (docs/placers.md, "The
// traversal-order study as its code ran it"), wherever this suite's rl placer can.
const std::vector<Preset> kPresets = {
    {.name = "wang2022",
     .options = {{"--orders", join(kStudyOrders, ",")},
                 {"--devices", "3"},
                 {"--seeds", "10"},
                 {"--rl-episodes", "50"},
                 {"--rl-eval-every", "5"},
                 {"--rl-start", placement::kRlStartDevice0},
                 {"--rl-episode-start", "best"},
                 {"--rl-reward", "log"},
                 {"--rl-baseline", "all-so-far"},
                 {"--rl-learning-rate", "0.001"},
                 {"--rl-final-learning-rate", "0.001"},
                 {"--rl-entropy", "0"},
                 {"--rl-entropy-schedule", "constant"},
                 {"--rl-clip-norm", "1.25"}}},
};

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

struct StudyOptions {
  std::vector<std::string> models;
  std::vector<std::string> graph_files;  // --graph-file: networks of graph files, beside --models
  std::vector<std::string> orders = kStudyOrders;
  std::vector<int> devices = {3};
  int seeds = 10;
  std::vector<std::string> baselines = {"greedy-eft"};
  int64_t batch_size = 32;
  int micro_batches = 1;
  DeviceSelection device;
  std::string profile_dir;
  placement::RlOptions rl;
  std::string out;
  bool quiet = false;
  std::string format;
  std::string preset;
  bool dry_run = false;
  CLI::App* app = nullptr;  // for recording the command line
  // Filled by apply_preset: the command line as given, and the options the preset set.
  std::string given_command_line;
  std::set<std::string> preset_options;
};

// Sets every option of the preset that the command line does not give, through the
// option's own parser, as if it had been given.
void apply_preset(StudyOptions& o) {
  if (o.preset.empty()) return;
  const auto found = std::find_if(kPresets.begin(), kPresets.end(),
                                  [&](const Preset& p) { return p.name == o.preset; });
  if (found == kPresets.end()) {
    throw_invalid("unknown preset '" + o.preset + "' (valid: " + join(preset_names()) + ")");
  }
  for (const auto& [flag, value] : found->options) {
    CLI::Option* option = o.app->get_option(flag);
    if (option->count() > 0) continue;  // given explicitly: it wins
    option->clear();
    option->add_result(value);
    option->run_callback();
    o.preset_options.insert(flag);
  }
}

std::string format_number(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

// The settings every rl run of the study uses, as resolved from the defaults, the preset
// and the command line, with where each came from.
struct Setting {
  std::string option;
  std::string value;
  std::string source;  // "given", "preset <name>" or "default"
};

std::vector<Setting> resolved_settings(const StudyOptions& o) {
  const placement::RlOptions& rl = o.rl;
  std::vector<std::string> devices;
  for (int k : o.devices) devices.push_back(std::to_string(k));
  const std::vector<std::pair<std::string, std::string>> values = {
      {"--orders", join(o.orders, ",")},
      {"--devices", join(devices, ",")},
      {"--seeds", std::to_string(o.seeds)},
      {"--rl-episodes", std::to_string(rl.episodes)},
      {"--rl-eval-every", std::to_string(rl.eval_every)},
      {"--rl-start", rl.start},
      {"--rl-episode-start", to_string(rl.episode_start)},
      {"--rl-reward", to_string(rl.reward)},
      {"--rl-baseline", to_string(rl.baseline)},
      {"--rl-learning-rate", format_number(rl.learning_rate)},
      {"--rl-final-learning-rate", format_number(rl.final_learning_rate)},
      {"--rl-entropy", format_number(rl.entropy_weight)},
      {"--rl-entropy-schedule", to_string(rl.entropy_schedule)},
      {"--rl-clip-norm", format_number(rl.clip_norm)},
      {"--rl-features", to_string(rl.features)},
      {"--rl-candidate-learning-rate", format_number(rl.candidate_learning_rate)},
      {"--rl-discount", format_number(rl.discount)},
      {"--rl-rounds", std::to_string(rl.rounds)},
      {"--rl-hidden", std::to_string(rl.hidden)},
      {"--rl-groups", std::to_string(rl.groups)},
      {"--rl-memory-penalty", format_number(rl.memory_penalty)},
      {"--rl-time-budget", format_number(rl.time_budget_s)},
  };
  std::vector<Setting> settings;
  for (const auto& [flag, value] : values) {
    std::string source = "default";
    if (o.preset_options.count(flag) > 0) {
      source = "preset " + o.preset;
    } else if (o.app->get_option(flag)->count() > 0) {
      source = "given";
    }
    settings.push_back({flag, value, source});
  }
  return settings;
}

std::string settings_text(const std::vector<Setting>& settings) {
  TextTable table({"setting", "value", "from"}, {0, 1, 2});
  for (const Setting& s : settings) table.add_row({s.option, s.value, s.source});
  return table.str();
}

std::string settings_json(const std::vector<Setting>& settings) {
  return json_array(settings, [](const Setting& s) {
    return JsonObject()
        .string("option", s.option)
        .string("value", s.value)
        .string("source", s.source)
        .str();
  });
}

void check_options(const StudyOptions& o) {
  require_format(o.format, kFormats);
  if (o.models.empty() && o.graph_files.empty()) {
    throw_invalid("--models (zoo models, comma-separated) or --graph-file is required");
  }
  for (const std::string& m : o.models) model_info(m);
  if (o.orders.empty()) throw_invalid("--orders is empty");
  for (const std::string& order : o.orders) placement::order_by_name(order);
  for (int k : o.devices) {
    if (k < 1) throw_invalid("--devices must be >= 1, got " + std::to_string(k));
  }
  ModelSelection sizes{.model = "resnet20", .options = {}, .micro_batches = o.micro_batches};
  sizes.options.batch_size = o.batch_size;
  selected_micro_batch_size(sizes);  // --micro-batches must divide --batch-size
  if (o.seeds < 1) throw_invalid("--seeds must be >= 1, got " + std::to_string(o.seeds));
  for (const std::string& b : o.baselines) {
    if (b == "rl") throw_invalid("--baselines takes heuristic placers, not rl");
    placement::placer_by_name(b);
  }
  placement::check_rl_options(o.rl);
  if (!o.device.profile.empty() && o.models.size() + o.graph_files.size() > 1) {
    throw_invalid("--profile holds one model's times; with several --models use --profile-dir");
  }
  if (!o.device.profile.empty() && !o.profile_dir.empty()) {
    throw_invalid("--profile and --profile-dir exclude each other");
  }
  // Every network by the name the study file gives it; a graph file's is its graph's name.
  std::set<std::string> names(o.models.begin(), o.models.end());
  if (names.size() != o.models.size()) throw_invalid("--models lists a model twice");
  for (const std::string& file : o.graph_files) {
    const std::string name = placement::read_graph_file(file).graph.name();
    if (!names.insert(name).second) {
      throw_invalid("--graph-file '" + file + "': its graph '" + name +
                    "' has the name of another network of the study");
    }
  }
  if (!o.profile_dir.empty()) {
    for (const std::string& m : names) {
      const std::string path = o.profile_dir + "/" + m + ".tsv";
      if (!std::filesystem::exists(path)) {
        throw_invalid("--profile-dir: no profile " + path +
                      " (make it with: interplace profile --model " + m + " --out " + path + ")");
      }
    }
  }
  if (o.dry_run) return;  // nothing is written
  if (o.out.empty()) throw_invalid("--out FILE is required");
  if (std::filesystem::exists(o.out)) {
    throw_invalid(o.out + " exists already; results are never overwritten (choose another --out)");
  }
}

// What was given on the command line, to store with the results.
std::string command_line(const CLI::App& app) {
  std::string text = "interplace " + app.get_name();
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() == 0 || option->get_name() == "--help") continue;
    text += " " + option->get_name();
    if (option->get_expected_max() == 0) continue;  // a flag
    text += " " + join(option->results(), ",");
  }
  return text;
}

std::string cost_device_name(const StudyOptions& o) {
  if (!o.profile_dir.empty()) return "profile:" + o.profile_dir + "/<model>.tsv";
  if (!o.device.profile.empty()) return "profile:" + o.device.profile;
  return o.device.preset.empty() ? "cpu-core" : o.device.preset;
}

double simulated_step_s(const placement::Graph& graph, const placement::Placement& placement,
                        const placement::NodeCosts& costs, const placement::CostModel& cost_model,
                        int micro_batches) {
  placement::StepRequest step;
  step.micro_batches = micro_batches;
  return placement::simulate_step(graph, placement, costs, cost_model, step).step_time_s;
}

// One line per model x devices x order: the median and range over the seeds.
struct SummaryRow {
  std::string model;
  int devices = 0;
  std::string order;
  int ok = 0;
  double median_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  double wall_s = 0.0;  // all seeds together
};

// --dry-run: the resolved settings and how many rl runs the study has at most (orders
// that coincide on a graph run once).
std::string dry_run(const StudyOptions& o) {
  const std::vector<Setting> settings = resolved_settings(o);
  const int64_t runs = static_cast<int64_t>(o.models.size() + o.graph_files.size()) *
                       static_cast<int64_t>(o.devices.size() * o.orders.size()) * o.seeds;
  if (o.format == "json") {
    return JsonObject()
               .boolean("dry_run", true)
               .string("preset", o.preset)
               .integer("rl_runs_at_most", runs)
               .raw("settings", settings_json(settings))
               .str() +
           "\n";
  }
  return "dry run" + (o.preset.empty() ? std::string() : ", preset " + o.preset) + ": at most " +
         std::to_string(runs) + " rl runs (orders that coincide on a graph run once)\n\n" +
         settings_text(settings);
}

std::string run_study(StudyOptions& o) {
  o.given_command_line = command_line(*o.app);
  apply_preset(o);
  check_options(o);
  if (o.dry_run) return dry_run(o);
  const auto started = std::chrono::steady_clock::now();
  OrderStudySetup setup;
  setup.created_utc = utc_now();
  setup.interplace_version = build_version();
  setup.git_commit = build_git_commit();
  setup.command_line = o.given_command_line;
  setup.cost_device = cost_device_name(o);
  setup.batch_size = o.batch_size;
  setup.micro_batches = o.micro_batches;
  setup.optimizer = placement::to_string(o.device.optimizer);
  setup.rl_episodes = o.rl.episodes;
  setup.rl_rounds = o.rl.rounds;
  setup.rl_hidden = o.rl.hidden;
  setup.rl_groups = o.rl.groups;
  setup.rl_learning_rate = o.rl.learning_rate;
  setup.rl_final_learning_rate = o.rl.final_learning_rate;
  setup.rl_entropy = o.rl.entropy_weight;
  setup.rl_memory_penalty = o.rl.memory_penalty;
  setup.rl_time_budget_s = o.rl.time_budget_s;
  setup.rl_start = o.rl.start;
  setup.rl_episode_start = to_string(o.rl.episode_start);
  setup.rl_reward = to_string(o.rl.reward);
  setup.rl_baseline = to_string(o.rl.baseline);
  setup.rl_entropy_schedule = to_string(o.rl.entropy_schedule);
  setup.rl_eval_every = o.rl.eval_every;
  setup.rl_clip_norm = o.rl.clip_norm;
  setup.rl_features = to_string(o.rl.features);
  setup.rl_candidate_learning_rate = o.rl.candidate_learning_rate;
  setup.rl_discount = o.rl.discount;
  setup.preset = o.preset;

  std::vector<OrderStudyModel> models;
  std::vector<OrderStudyRun> runs;
  std::vector<OrderStudyBaseline> baselines;
  std::vector<SummaryRow> summary;
  const size_t blocks =
      (o.models.size() + o.graph_files.size()) * o.devices.size() * o.orders.size();
  size_t block = 0;
  std::vector<ModelSelection> selections;
  for (const std::string& name : o.models) {
    selections.push_back({.model = name, .options = {}, .micro_batches = o.micro_batches});
  }
  for (const std::string& file : o.graph_files) {
    selections.push_back(
        {.model = "", .options = {}, .micro_batches = o.micro_batches, .graph_file = file});
  }
  for (ModelSelection& model : selections) {
    model.options.batch_size = o.batch_size;
    const placement::Graph graph = build_selected_model(model);
    const std::string name = model.label();
    DeviceSelection device = o.device;
    if (!o.profile_dir.empty()) device.profile = o.profile_dir + "/" + name + ".tsv";
    const placement::CostModel cost_model = make_cost_model(device);
    const placement::NodeCosts costs = cost_model.node_costs(graph);
    const placement::GraphStats stats = placement::compute_graph_stats(graph);
    models.push_back(
        {.name = name,
         .family = model.graph_file.empty() ? model_info(name).family : model.graph_family,
         .node_count = stats.node_count,
         .edge_count = stats.edge_count,
         .depth = stats.depth,
         .max_width = stats.max_width,
         .mean_branching_factor = stats.mean_branching_factor,
         .critical_path_cost_share = stats.critical_path_cost_share,
         .parameter_count = graph.total_parameter_count(),
         .same_orders = {},
         .distinct_orders = 0});
    // Orders that are one order on this graph run once (under the first name asked).
    placement::OrderOptions order_options;
    order_options.seed = 1;
    for (placement::NodeId id = 0; id < graph.node_count(); ++id) {
      order_options.node_cost.push_back(costs.compute_s(id));
    }
    std::vector<placement::OrderKind> kinds;
    for (const std::string& order : o.orders) kinds.push_back(placement::order_by_name(order));
    const std::vector<int> same = placement::same_sequence_as(graph, kinds, order_options);
    for (size_t i = 0; i < same.size(); ++i) {
      if (same[i] >= 0) {
        models.back().same_orders.push_back(o.orders[i] + "=" +
                                            o.orders[static_cast<size_t>(same[i])]);
      }
    }
    models.back().distinct_orders = std::count(same.begin(), same.end(), -1);
    if (!o.quiet && !models.back().same_orders.empty()) {
      std::cerr << name + ": not run, the same node sequence as an earlier order: " +
                       join(models.back().same_orders) + "\n";
    }
    for (int k : o.devices) {
      for (size_t oi = 0; oi < o.orders.size(); ++oi) {
        const std::string& order = o.orders[oi];
        if (same[oi] >= 0) {
          block += 1;
          continue;
        }
        const auto block_start = std::chrono::steady_clock::now();
        PlacementSelection selection;
        selection.order = order;
        selection.devices = k;
        for (const std::string& placer : o.baselines) {
          selection.placer = placer;
          OrderStudyBaseline row;
          row.model = name;
          row.order = order;
          row.devices = k;
          row.placer = placer;
          try {
            const PlacementRun run = run_placement(graph, cost_model, selection, o.micro_batches);
            row.step_time_s =
                simulated_step_s(graph, run.placement, run.costs, cost_model, o.micro_batches);
          } catch (const std::exception& e) {
            row.step_time_s = std::numeric_limits<double>::quiet_NaN();
            row.reason = e.what();
          }
          baselines.push_back(row);
        }
        selection.placer = "rl";
        selection.rl = o.rl;
        SummaryRow line;
        line.model = name;
        line.devices = k;
        line.order = order;
        std::vector<double> times;
        for (int seed = 1; seed <= o.seeds; ++seed) {
          selection.seed = static_cast<uint64_t>(seed);
          OrderStudyRun row;
          row.model = name;
          row.order = order;
          row.devices = k;
          row.seed = seed;
          try {
            const PlacementRun run = run_placement(graph, cost_model, selection, o.micro_batches);
            const placement::RlTrainingLog& log = *run.rl_log;
            row.status = "ok";
            row.step_time_s =
                simulated_step_s(graph, run.placement, run.costs, cost_model, o.micro_batches);
            row.start_step_time_s = log.start_step_time_s;
            row.greedy_step_time_s = log.greedy_step_time_s;
            row.placer_wall_s = run.placer_wall_s;
            row.episodes_run = log.episodes_run;
            row.episode_step_time_s = log.episode_step_time_s;
            row.best_so_far_step_time_s = log.best_step_time_s;
            times.push_back(row.step_time_s);
            line.wall_s += run.placer_wall_s;
          } catch (const std::exception& e) {
            const double nan = std::numeric_limits<double>::quiet_NaN();
            row.status = "failed";
            row.reason = e.what();
            row.step_time_s = row.start_step_time_s = row.greedy_step_time_s = nan;
          }
          runs.push_back(std::move(row));
        }
        line.ok = static_cast<int>(times.size());
        line.median_s = kernels::median(times);
        line.min_s = times.empty() ? line.median_s : *std::min_element(times.begin(), times.end());
        line.max_s = times.empty() ? line.median_s : *std::max_element(times.begin(), times.end());
        summary.push_back(line);
        ++block;
        if (!o.quiet) {
          const double took =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - block_start).count();
          std::cerr << "[" + std::to_string(block) + "/" + std::to_string(blocks) + "] " + name +
                           " K=" + std::to_string(k) + " " + order + ": median " +
                           format_seconds(line.median_s) + " over " + std::to_string(line.ok) +
                           " seeds, " + format_fixed(took, 1) + " s\n"
                    << std::flush;
        }
      }
    }
    // After each model, so that a stopped study keeps every finished model.
    write_order_study_file(o.out, setup, models, runs, baselines);
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto failed = std::count_if(runs.begin(), runs.end(),
                                    [](const OrderStudyRun& r) { return r.status != "ok"; });
  if (o.format == "json") {
    const std::string rows = json_array(summary, [](const SummaryRow& r) {
      return JsonObject()
          .string("model", r.model)
          .integer("devices", r.devices)
          .string("order", r.order)
          .integer("ok", r.ok)
          .number("median_step_time_s", r.median_s)
          .number("min_step_time_s", r.min_s)
          .number("max_step_time_s", r.max_s)
          .number("placer_wall_s", r.wall_s)
          .str();
    });
    const std::string distinct = json_array(models, [](const OrderStudyModel& m) {
      return JsonObject()
          .string("model", m.name)
          .integer("distinct_orders", m.distinct_orders)
          .raw("same_orders",
               json_array(m.same_orders, [](const std::string& s) { return json_string(s); }))
          .str();
    });
    return JsonObject()
               .string("out", o.out)
               .integer("runs", static_cast<int64_t>(runs.size()))
               .integer("failed", failed)
               .number("wall_s", wall_s)
               .string("preset", o.preset)
               .raw("settings", settings_json(resolved_settings(o)))
               .raw("models", distinct)
               .raw("summary", rows)
               .str() +
           "\n";
  }
  TextTable table({"model", "K", "order", "ok", "median", "min", "max", "placer wall"}, {2});
  for (const SummaryRow& r : summary) {
    table.add_row({r.model, std::to_string(r.devices), r.order, std::to_string(r.ok),
                   format_seconds(r.median_s), format_seconds(r.min_s), format_seconds(r.max_s),
                   format_fixed(r.wall_s, 1) + " s"});
  }
  std::string same;
  for (const OrderStudyModel& m : models) {
    if (!m.same_orders.empty()) {
      same += m.name + ": " + std::to_string(m.distinct_orders) +
              " distinct orders; not run: " + join(m.same_orders) + "\n";
    }
  }
  return o.out + ": " + std::to_string(runs.size()) + " rl runs (" + std::to_string(failed) +
         " failed) in " + format_fixed(wall_s, 1) + " s\n" + same + "\n" + table.str() + "\n" +
         settings_text(resolved_settings(o));
}

}  // namespace

Command add_order_study_command(CLI::App& root) {
  auto o = std::make_shared<StudyOptions>();
  CLI::App* app = root.add_subcommand(
      "order-study",
      "The traversal-order study: the rl placer on every model x devices x order x seed, "
      "into an order-study file (docs/results-format.md)");
  o->app = app;
  app->add_option("--models", o->models, "zoo models, comma-separated (--list-models)")
      ->delimiter(',');
  app->add_option("--graph-file", o->graph_files,
                  "graph files (docs/your-network.md), comma-separated or repeated; studied "
                  "beside --models under their graphs' names")
      ->delimiter(',');
  app->add_option("--orders", o->orders,
                  "traversal orders, comma-separated (default: the study's six: " +
                      join(kStudyOrders, ",") + ")")
      ->delimiter(',');
  app->add_option("--devices", o->devices, "device counts K, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--seeds", o->seeds, "seeds 1..N per setting (the study's repetitions)")
      ->capture_default_str();
  app->add_option("--baselines", o->baselines,
                  "heuristic placers recorded per model x K x order, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--batch-size", o->batch_size, "samples per mini-batch")->capture_default_str();
  app->add_option("--micro-batches", o->micro_batches, "micro-batches per mini-batch")
      ->capture_default_str();
  add_device_options(*app, o->device);
  app->add_option("--profile-dir", o->profile_dir,
                  "measured profiles DIR/<model>.tsv, one per model (interplace profile)");
  add_rl_options(*app, o->rl);
  app->add_option("--out", o->out, "order-study file to write (HDF5; must not exist)");
  app->add_flag("--quiet", o->quiet, "no progress lines on stderr");
  add_format_option(*app, o->format, kFormats);
  app->add_option(
      "--preset", o->preset,
      "run a study's settings (an option given beside it wins): " + join(preset_names()));
  app->add_flag("--dry-run", o->dry_run,
                "print the resolved settings and the number of runs; run nothing (no --out)");
  set_example(*app,
              "interplace order-study --models resnet20 --orders topo-lifo,lexical --seeds 2 "
              "--rl-episodes 5 --out study.h5");
  return {app, [o] { return run_study(*o); }};
}

}  // namespace interplace::runs::cli
