// interplace sweep SPEC --out FILE: runs every configuration of a sweep spec under
// mpirun/srun and appends each to the result file (docs/cli.md, "sweep").
#include "cmd_sweep.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "error_line.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/results_file.hpp"
#include "json_writer.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct SweepCommandOptions {
  std::string spec;
  std::vector<std::string> overrides;
  std::string out;
  std::string shard = "0/1";
  std::string filter;
  bool resume = false;
  bool dry_run = false;
  int ranks = 0;  // dry run: the job's ranks (0: the largest devices of the selection)
  std::string format;
  int exit_status = 0;
};

const std::vector<std::string> kFormats = {"text", "json"};

// Single-quoted for a POSIX shell when it needs quoting.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string resume_command(const SweepCommandOptions& o) {
  std::string cmd = "interplace sweep " + shell_word(o.spec);
  for (const std::string& override : o.overrides) cmd += " " + shell_word(override);
  cmd += " --out " + shell_word(o.out) + " --resume";
  if (o.shard != "0/1") cmd += " --shard " + o.shard;
  if (!o.filter.empty()) cmd += " --filter " + shell_word(o.filter);
  return cmd;
}

std::string outcome_text(const PlannedConfig& p) {
  return "would " + p.outcome + (p.reason.empty() ? "" : ": " + p.reason);
}

// The dry run: the run's planning for every selected configuration, on this process.
std::string dry_run_output(SweepCommandOptions& o, const SweepRunner& runner) {
  const auto start = std::chrono::steady_clock::now();
  const SweepSpec spec = load_sweep_spec(o.spec, o.overrides);
  const Shard shard = parse_shard(o.shard);
  const std::vector<const SweepConfig*> selected = select_configs(spec, o.filter, shard);
  int needed = 0;
  for (const SweepConfig* c : selected) needed = std::max(needed, c->train.ranks());
  if (o.ranks < 0) throw_invalid("--ranks must be >= 1, got " + std::to_string(o.ranks));
  const int ranks = o.ranks > 0 ? o.ranks : std::max(needed, 1);
  const std::vector<PlannedConfig> planned = plan_sweep(spec, selected, runner, ranks);
  const double plan_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::map<std::string, int64_t> by_outcome = {{"run", 0}, {"skip", 0}, {"fail", 0}};
  std::vector<std::pair<std::string, int64_t>> reasons;  // "skip: why", first-seen order
  for (const PlannedConfig& p : planned) {
    ++by_outcome[p.outcome];
    if (p.outcome == "run") continue;
    const std::string key = outcome_text(p);
    auto at = std::find_if(reasons.begin(), reasons.end(),
                           [&key](const auto& r) { return r.first == key; });
    if (at == reasons.end()) {
      reasons.emplace_back(key, 1);
    } else {
      ++at->second;
    }
  }
  if (by_outcome["run"] == 0) o.exit_status = 2;
  // Napkin math of what the run costs: per configuration its steps x the simulated step
  // (no evaluation, start-up or profiling), summed; device time counts every rank.
  double train_s = 0.0, device_s = 0.0;
  std::set<std::string> cost_models;
  for (const PlannedConfig& p : planned) {
    if (p.outcome != "run") continue;
    train_s += p.predicted_train_s();
    device_s += p.predicted_train_s() * p.config->train.ranks();
    cost_models.insert(p.cost_model);
  }
  std::string cost_models_text;
  for (const std::string& m : cost_models) {
    cost_models_text += (cost_models_text.empty() ? "" : ", ") + m;
  }

  if (o.format == "json") {
    std::string overrides = "[";
    for (const std::string& v : spec.overrides) {
      overrides += (overrides.size() > 1 ? "," : "") + json_string(v);
    }
    overrides += "]";
    return JsonObject()
               .string("spec", spec.path)
               .raw("overrides", overrides)
               .string("filter", o.filter)
               .string("shard", shard.str())
               .integer("configurations", static_cast<int64_t>(spec.configs.size()))
               .integer("selected", static_cast<int64_t>(selected.size()))
               .integer("ranks", ranks)
               .integer("ranks_needed", needed)
               .integer("would_run", by_outcome["run"])
               .integer("would_skip", by_outcome["skip"])
               .integer("would_fail", by_outcome["fail"])
               .raw("reasons", json_array(reasons,
                                          [](const std::pair<std::string, int64_t>& r) {
                                            return JsonObject()
                                                .string("outcome", r.first)
                                                .integer("count", r.second)
                                                .str();
                                          }))
               .number("plan_s", plan_s)
               .number("predicted_train_s", train_s)
               .number("predicted_device_s", device_s)
               .raw("configs", json_array(planned,
                                          [](const PlannedConfig& p) {
                                            const SweepConfig* c = p.config;
                                            return JsonObject()
                                                .integer("index", c->index)
                                                .string("id", c->id)
                                                .string("name", c->train.display_name())
                                                .integer("repeat", c->repeat)
                                                .integer("devices", c->train.devices)
                                                .string("outcome", p.outcome)
                                                .string("reason", p.reason)
                                                .number("predicted_step_s", p.predicted_step_s)
                                                .integer("steps", p.steps)
                                                .number("predicted_train_s", p.predicted_train_s())
                                                .string("cost_model", p.cost_model)
                                                .string("canonical_parameters",
                                                        canonical_parameters(c->train, c->repeat))
                                                .str();
                                          }))
               .str() +
           "\n";
  }
  TextTable table({"index", "id", "name", "repeat", "step (sim)", "steps", "train (sim)", "plan"},
                  {1, 2, 7});
  for (const PlannedConfig& p : planned) {
    const SweepConfig* c = p.config;
    const bool runs = p.outcome == "run";
    // NaN: a simulate-only rl configuration, whose step is what its training finds.
    const std::string step = !runs                            ? ""
                             : std::isnan(p.predicted_step_s) ? "(rl trains)"
                                                              : format_seconds(p.predicted_step_s);
    table.add_row({std::to_string(c->index), c->id, c->train.display_name(),
                   std::to_string(c->repeat), step, runs ? std::to_string(p.steps) : "",
                   runs ? format_duration(p.predicted_train_s()) : "", outcome_text(p)});
  }
  std::string text = table.str() + plural(static_cast<int64_t>(selected.size()), "configuration",
                                          "configurations");
  text += " of " + std::to_string(spec.configs.size()) + " in shard " + shard.str();
  if (!o.filter.empty()) text += " matching --filter " + shell_word(o.filter);
  text += ", planned for " + plural(ranks, "rank", "ranks") + ": " +
          std::to_string(by_outcome["run"]) + " would run, " + std::to_string(by_outcome["skip"]) +
          " would skip, " + std::to_string(by_outcome["fail"]) + " would fail\n";
  for (const auto& [reason, count] : reasons) {
    text += "  " + std::to_string(count) + " x " + reason + "\n";
  }
  if (by_outcome["run"] > 0) {
    text += "predicted training: " + format_duration(train_s) + " one after the other, " +
            format_duration(device_s) +
            " of device time (ranks x time; simulated steps on one rank per device, cost "
            "model " +
            cost_models_text + "; evaluation and start-up not counted)\n";
  }
  text += "ranks needed: " + std::to_string(needed) +
          " (the largest devices x data_parallel); planned in " + format_seconds(plan_s) + "\n";
  if (by_outcome["run"] == 0) std::cerr << "interplace sweep: no configuration would run\n";
  return text;
}

std::string summary_output(const SweepCommandOptions& o, const SweepSummary& s) {
  const std::string stopped = s.stop_signal != 0 ? "SIGUSR1" : "";
  if (o.format == "json") {
    return JsonObject()
               .string("out", o.out)
               .string("shard", o.shard)
               .integer("selected", s.selected)
               .integer("already_done", s.already_done)
               .integer("ok", s.ok)
               .integer("failed", s.failed)
               .integer("skipped", s.skipped)
               .integer("kept", s.already_done + s.ok + s.failed + s.skipped + s.diverged)
               .string("stopped_by", stopped)
               .integer("diverged", s.diverged)
               .number("wall_s", s.wall_s)
               .number("append_s", s.append_s)
               .str() +
           "\n";
  }
  return o.out + ": " + std::to_string(s.ok) + " ok, " + std::to_string(s.failed) + " failed, " +
         std::to_string(s.skipped) + " skipped" +
         (s.diverged > 0 ? ", " + std::to_string(s.diverged) + " diverged" : "") +
         (s.already_done > 0 ? ", " + std::to_string(s.already_done) + " already there" : "") +
         " (" + plural(s.selected, "configuration", "configurations") + " in shard " + o.shard +
         ") in " + format_seconds(s.wall_s) +
         (stopped.empty() ? "" : "; stopped by " + stopped + ", resumable") + "\n";
}

std::string run_sweep_command(SweepCommandOptions& o, const SweepRunner& runner) {
  require_format(o.format, kFormats);
  const Shard shard = parse_shard(o.shard);
  if (o.dry_run) return dry_run_output(o, runner);
  if (o.ranks != 0) throw_invalid("--ranks is for --dry-run (a run has the ranks of its job)");
  if (o.out.empty()) throw_invalid("--out FILE is required (or --dry-run)");
  MpiSession session(nullptr, nullptr);
  try {
    // Every rank parses the spec: a bad one fails everywhere alike, before anything runs.
    const SweepSpec spec = load_sweep_spec(o.spec, o.overrides);
    const SweepOptions options{o.out, shard, o.resume, o.filter, resume_command(o)};
    const SweepSummary summary = run_sweep(spec, options, runner, MPI_COMM_WORLD, std::cerr);
    if (summary.stop_signal != 0) o.exit_status = kExitInterrupted;
    // Rank 0 writes the summary before any rank ends: once one rank of a job that is
    // stopping (exit 3) has exited, mpirun ends the others, and a summary printed after
    // MPI_Finalize was sometimes cut off (runs.sweep.sigusr1_finishes_current_np2).
    if (session.world_rank() == 0) std::cout << summary_output(o, summary) << std::flush;
    MPI_Barrier(MPI_COMM_WORLD);
    return "";
  } catch (...) {
    // Every rank fails with the same error (run_sweep agrees on it): rank 0 says so.
    report_shared_failure(session.world_rank());
  }
}

}  // namespace

Command add_sweep_command(CLI::App& root, SweepRunner runner) {
  auto o = std::make_shared<SweepCommandOptions>();
  CLI::App* app = root.add_subcommand(
      "sweep", "Run every configuration of a sweep spec (under mpirun/srun) into a result file");
  app->add_option("spec", o->spec, "sweep specification (TOML; docs/cli.md)")->required();
  app->add_option("overrides", o->overrides,
                  "key=value: replaces a key of the spec as if the file said it (steps=3, "
                  "models=resnet20,gpt-mini, model_options.layers=2)");
  app->add_option("--out,-o", o->out, "result file (HDF5) to create, or to continue with --resume");
  app->add_option("--shard", o->shard,
                  "run every n-th configuration from the i-th (of those --filter selects)")
      ->capture_default_str();
  app->add_option("--filter", o->filter,
                  "only the configurations whose id or name contains a match of this "
                  "regular expression (ECMAScript)");
  app->add_flag("--resume", o->resume,
                "continue an existing result file, skipping the configurations it holds");
  app->add_flag("--dry-run", o->dry_run,
                "plan every configuration (no MPI, nothing trains), say which would run or be "
                "skipped and why, and exit (2 when none would run)");
  app->add_option("--ranks", o->ranks,
                  "with --dry-run: the job's rank count (default: the largest devices)");
  add_format_option(*app, o->format, kFormats);
  set_example(*app, "mpirun -np 2 interplace sweep runs/configs/smoke.toml --out smoke.h5");
  return {app, [o, runner = std::move(runner)] { return run_sweep_command(*o, runner); },
          [o] { return o->exit_status; }};
}

}  // namespace interplace::runs::cli
