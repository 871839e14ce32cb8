#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

#include "agreement.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/failure.hpp"
#include "interplace/runs/auto_profile.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/results_format.hpp"
#include "interplace/runs/sweep.hpp"
#include "progress.hpp"
#include "same_sequence.hpp"
#include "stop_signals.hpp"

namespace interplace::runs {
namespace {

using sweep::agree;
using sweep::Outcome;
using sweep::OutcomeCode;
using sweep::StopRequest;
using sweep::StopSignals;
using sweep::Unabandonable;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Turns whatever a step threw into an outcome, as the CLI and train classify it
// (kernels/failure.hpp): invalid input means "cannot run" (skipped) while planning.
Outcome outcome_of(const std::exception_ptr& error, bool planning) {
  const Failure failure = classify_failure(error, planning);
  return {failure.outcome == FailureOutcome::skipped    ? OutcomeCode::skipped
          : failure.outcome == FailureOutcome::diverged ? OutcomeCode::diverged
                                                        : OutcomeCode::failed,
          failure.message};
}

// A configuration of k ranks in a job of `ranks`: skipped when the job is too small.
Outcome fits_the_job(int k, int ranks) {
  if (k <= ranks) return {};
  return {OutcomeCode::skipped,
          "needs " + std::to_string(k) + " ranks, the job has " + std::to_string(ranks)};
}

// Rank 0 does something alone (create, read, write the file); every rank then throws the
// same error when it failed, so that none is left waiting.
template <typename Action>
void on_rank0_then_agree(MPI_Comm world, int rank, Action action) {
  Outcome mine;
  if (rank == 0) {
    try {
      action();
    } catch (...) {
      mine = outcome_of(std::current_exception(), true);
    }
  }
  const Outcome all = agree(world, mine);
  if (all.code == OutcomeCode::skipped) throw_invalid(all.message);
  if (all.code != OutcomeCode::ok) throw_runtime(all.message);
}

// Sub-communicators of world ranks 0..K-1, made once per K (collective over world).
class Communicators {
 public:
  explicit Communicators(MPI_Comm world) : world_(world) {}
  ~Communicators() {
    for (auto& [k, comm] : comms_) {
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
  }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;

  MPI_Comm first(int k, int rank) {
    auto at = comms_.find(k);
    if (at == comms_.end()) {
      MPI_Comm comm = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(world_, rank < k ? 0 : MPI_UNDEFINED, rank, &comm),
                "MPI_Comm_split");
      if (comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      at = comms_.emplace(k, comm).first;
    }
    return at->second;
  }

 private:
  MPI_Comm world_;
  std::map<int, MPI_Comm> comms_;
};

std::string shown(const std::string& text) {
  if (text.empty()) return "none";
  std::string out = text;
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return "'" + out + "'";
}

// Which of the selected configurations the file holds already (rank 0 reads, all learn).
std::vector<char> open_output(const std::vector<const SweepConfig*>& selected,
                              const SweepSpec& spec, const SweepOptions& options,
                              const Provenance& provenance, MPI_Comm world, int rank,
                              std::ostream& progress) {
  std::vector<char> done(selected.size(), 0);
  on_rank0_then_agree(world, rank, [&] {
    if (!options.resume || !std::filesystem::exists(options.out)) {
      create_results_file(options.out, provenance);
      return;
    }
    // A journal left by a killed job goes into the file first (docs/results-format.md).
    fold_journal(options.out);
    const ResultsSummary existing = read_results_file(options.out);
    // New groups are written in this version's layout: in an older file they would sit
    // under a format_version that does not describe them.
    if (existing.format_version != kResultsFormatVersion) {
      throw_invalid(options.out + " is result format version " +
                    std::to_string(existing.format_version) + "; this interplace writes " +
                    std::to_string(kResultsFormatVersion) +
                    " and --resume cannot add to an older file. HINT: resume it with the "
                    "interplace that started it, or sweep the rest into another --out (the "
                    "analysis reads both files together)");
    }
    // The overrides and the filter decide which configurations exist and which run: a
    // different set would mix sweeps under one file.
    if (existing.overrides != provenance.overrides || existing.filter != provenance.filter) {
      throw_invalid(options.out + " was made with overrides " + shown(existing.overrides) +
                    " and filter " + shown(existing.filter) + "; --resume needs the same, got " +
                    shown(provenance.overrides) + " and " + shown(provenance.filter));
    }
    // A shard file holds the configurations of one --shard: continuing it as another shard
    // (or unsharded) would mix assignments, and its shard attribute would lie.
    if (existing.shard != provenance.shard) {
      const std::string hint = existing.shard == "merged"
                                   ? "resume the shard files, then merge them again"
                                   : "resume with --shard " + existing.shard;
      throw_invalid(options.out + " holds shard " + existing.shard +
                    "; --resume needs the same --shard, got " + provenance.shard +
                    ". HINT: " + hint);
    }
    if (existing.spec_text != spec.text) {
      progress << "warning: " << options.out << " was started from another spec text ("
               << existing.spec_path << "); configurations are matched by id\n";
    }
    std::set<std::string> ids;
    for (const StoredConfig& c : existing.configs) ids.insert(c.id);
    for (size_t i = 0; i < selected.size(); ++i) done[i] = ids.count(selected[i]->id) > 0;
  });
  check_mpi(MPI_Bcast(done.data(), static_cast<int>(done.size()), MPI_CHAR, 0, world), "MPI_Bcast");
  return done;
}

// The profiles of the profile:auto configurations (auto_profile.hpp) on every rank, one
// per AutoProfileKey: those the file holds already (--resume), then each measured in this
// job before the first configuration that needs it and appended to the file, so that a
// resumed sweep predicts from the profile its first part did. Every call is collective.
class AutoProfiles {
 public:
  AutoProfiles(const SweepOptions& options, const SweepRunner& runner, MPI_Comm world, int rank,
               std::ostream& progress)
      : options_(options), runner_(runner), world_(world), rank_(rank), progress_(progress) {
    std::string stored;  // name, key, text: three lines' lengths then the texts, per profile
    if (rank == 0 && options.resume) {
      for (const StoredProfile& p : read_profiles(options.out)) {
        stored += std::to_string(p.name.size()) + " " + std::to_string(p.key.size()) + " " +
                  std::to_string(p.text.size()) + "\n" + p.name + p.key + p.text;
      }
    }
    stored = broadcast_text(stored, world);
    for (size_t at = 0; at < stored.size();) {
      std::istringstream sizes(stored.substr(at, stored.find('\n', at) - at));
      size_t name = 0, key = 0, text = 0;
      sizes >> name >> key >> text;
      at = stored.find('\n', at) + 1;
      Entry entry{stored.substr(at, name), nullptr, ""};
      entry.profile = parse_profile_text(stored.substr(at + name + key, text),
                                         options.out + ": profile " + entry.name);
      by_key_[stored.substr(at + name, key)] = std::move(entry);
      at += name + key + text;
    }
  }

  // Sets config.measured_profile, measuring it first when this job has not; returns the
  // /profiles group's name. Throws (on every rank) when measuring failed, now or before.
  std::string attach(TrainConfig& config) {
    int threads = rank_ == 0 ? auto_profile_threads(config) : 0;
    check_mpi(MPI_Bcast(&threads, 1, MPI_INT, 0, world_), "MPI_Bcast");
    const AutoProfileKey key = auto_profile_key(config, threads);
    auto found = by_key_.find(key.text);
    if (found == by_key_.end())
      found = by_key_.emplace(key.text, measure(config, key, threads)).first;
    if (!found->second.error.empty()) throw_runtime(found->second.error);
    config.measured_profile = found->second.profile;
    return found->second.name;
  }

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<const placement::Profile> profile;
    std::string error;  // measuring failed: every configuration of the key fails with it
  };

  Entry measure(const TrainConfig& config, const AutoProfileKey& key, int threads) {
    Entry entry{key.id + "-" + std::to_string(options_.shard.index), nullptr, ""};
    if (rank_ == 0) {
      progress_ << utc_now() << " measuring the profile of " << config.model << " at micro-batch "
                << config.micro_batch_samples() << ", " << threads
                << " CPU threads (cost_device profile:auto, " << entry.name << ")\n"
                << std::flush;
    }
    const auto start = Clock::now();
    AgreedProfile measured;
    try {
      measured =
          measure_on_every_rank([&] { return runner_.profile(config, threads, world_); }, world_);
    } catch (const Error& e) {
      entry.error = e.what();
      return entry;
    }
    entry.profile = measured.profile;
    const StoredProfile stored{entry.name, key.text, measured.text, utc_now(),
                               seconds_since(start)};
    on_rank0_then_agree(world_, rank_, [&] { append_profile(options_.out, stored); });
    if (rank_ == 0) {
      progress_ << utc_now() << " measured " << entry.name << " in "
                << static_cast<int>(std::lround(stored.measure_s)) << " s\n"
                << std::flush;
    }
    return entry;
  }

  const SweepOptions& options_;
  const SweepRunner& runner_;
  MPI_Comm world_;
  int rank_;
  std::ostream& progress_;
  std::map<std::string, Entry> by_key_;  // AutoProfileKey::text -> its profile
};

}  // namespace

std::vector<const SweepConfig*> select_configs(const SweepSpec& spec, const std::string& filter,
                                               const Shard& shard) {
  std::optional<std::regex> pattern;
  if (!filter.empty()) {
    try {
      pattern.emplace(filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw_invalid("--filter '" + filter + "' is not a regular expression: " + e.what());
    }
  }
  // Shards take whole settings (every repeat of one on the same shard), counted among the
  // settings the filter leaves; without repeats a setting is one configuration.
  std::vector<const SweepConfig*> out;
  int64_t matched = -1;
  int64_t last_setting = -1;
  for (const SweepConfig& c : spec.configs) {
    if (pattern && !std::regex_search(c.id, *pattern) &&
        !std::regex_search(c.train.display_name(), *pattern)) {
      continue;
    }
    if (c.setting != last_setting) {
      ++matched;
      last_setting = c.setting;
    }
    if (shard.takes(matched)) out.push_back(&c);
  }
  return out;
}

std::vector<const SweepConfig*> interleave_repeats(std::vector<const SweepConfig*> configs) {
  const bool repeated = std::any_of(configs.begin(), configs.end(),
                                    [](const SweepConfig* c) { return c->repeat > 0; });
  if (!repeated) return configs;
  // (round, the setting's identity mixed with the round), computed once per configuration;
  // the identity is the setting, not the id (which differs per repeat).
  std::vector<std::pair<std::pair<int, uint64_t>, const SweepConfig*>> keyed;
  keyed.reserve(configs.size());
  for (const SweepConfig* c : configs) {
    keyed.push_back(
        {{c->repeat, fnv1a64(std::to_string(c->setting) + "/" + std::to_string(c->repeat) + "/" +
                             c->train.display_name())},
         c});
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) configs[i] = keyed[i].second;
  return configs;
}

std::vector<PlannedConfig> plan_sweep(const SweepSpec& spec,
                                      const std::vector<const SweepConfig*>& selected,
                                      const SweepRunner& runner, int ranks) {
  sweep::SameSequence same_sequence(spec);
  std::vector<PlannedConfig> out;
  for (const SweepConfig* config : selected) {
    PlannedConfig planned;
    planned.config = config;
    planned.outcome = "run";
    Outcome outcome;
    try {
      // Without MPI there is no job to measure a profile:auto in: planned on its preset.
      TrainConfig train = config->train;
      if (train.profile_path == kAutoProfile) train.profile_path.clear();
      // A simulate-only rl configuration's plan is its result (the rl policy trained): the
      // dry run checks the rest of it on a heuristic's placement and predicts no step.
      const bool learned = train.simulate_only && train.placer == placement::PlacerKind::rl;
      if (learned) train.placer = placement::PlacerKind::contiguous;
      const std::string twin = train.simulate_only ? same_sequence.earlier_twin(*config) : "";
      if (!twin.empty()) {
        outcome = {OutcomeCode::skipped, sweep::same_sequence_reason(twin)};
      } else {
        const TrainPlan plan = runner.plan(train);
        planned.predicted_step_s =
            learned ? std::numeric_limits<double>::quiet_NaN() : plan.prediction.step_time_s;
        planned.steps =
            train.simulate_only ? 0 : int64_t{plan.config.warmup_steps} + plan.config.steps;
        planned.cost_model = cost_device_string(plan.config);
      }
    } catch (...) {
      outcome = outcome_of(std::current_exception(), true);
    }
    // As run_sweep: planning first, then the job's size (a simulate-only configuration
    // plans on one rank of any job).
    if (outcome.code == OutcomeCode::ok && !config->train.simulate_only) {
      outcome = fits_the_job(config->train.ranks(), ranks);
    }
    if (outcome.code == OutcomeCode::skipped) planned.outcome = "skip";
    if (outcome.code == OutcomeCode::failed) planned.outcome = "fail";
    planned.reason = outcome.message;
    out.push_back(std::move(planned));
  }
  return out;
}

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const SweepRunner& runner, MPI_Comm world, std::ostream& progress) {
  const auto start = Clock::now();
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  const std::vector<const SweepConfig*> selected =
      select_configs(spec, options.filter, options.shard);
  const Provenance provenance =
      collect_provenance(world, options.shard.str(), spec, options.filter);
  // Signals from here on; until the output is open they only set a flag.
  StopSignals signals(kExitInterrupted);
  // Not abandonable until rank 0 knows what to say when a signal ends it.
  std::optional<Unabandonable> opening(std::in_place, signals);
  const std::vector<char> done =
      open_output(selected, spec, options, provenance, world, rank, progress);

  SweepSummary summary;
  summary.selected = static_cast<int>(selected.size());
  std::vector<const SweepConfig*> todo;
  for (size_t i = 0; i < selected.size(); ++i) {
    if (done[i]) {
      ++summary.already_done;
    } else {
      todo.push_back(selected[i]);
    }
  }
  todo = interleave_repeats(std::move(todo));
  Progress lines(progress, rank == 0 && isatty(STDERR_FILENO), summary.selected,
                 summary.already_done);
  if (rank == 0 && summary.already_done > 0) lines.resumed();
  // What rank 0 says when a signal stops the sweep: what the file keeps, how to go on.
  auto kept_note = [&] {
    std::ostringstream note;
    note << "kept "
         << summary.already_done + summary.ok + summary.failed + summary.skipped + summary.diverged
         << " of " << summary.selected << " configurations in " << options.out
         << "; resume with: " << options.resume_command << "\n";
    return note.str();
  };

  if (rank == 0) signals.set_note(": stopped; " + kept_note());
  opening.reset();

  AutoProfiles profiles(options, runner, world, rank, progress);
  Communicators comms(world);
  sweep::SameSequence same_sequence(spec);
  for (const SweepConfig* config : todo) {
    {
      const Unabandonable writing(signals);  // the note changes
      if (rank == 0)
        signals.set_note(": stopped, the configuration in flight abandoned; " + kept_note());
    }
    // Every rank learns of a stop request at the same configuration boundary.
    if (sweep::agree_max(world, static_cast<int>(StopSignals::requested())) > 0) {
      summary.stop_signal = SIGUSR1;
      break;
    }
    const auto config_start = Clock::now();
    ConfigRecord record{*config, "ok", "", utc_now(), 0.0, nullptr, nullptr, "", ""};
    const int k = config->train.ranks();  // devices x data-parallel replicas
    const bool simulate_only = config->train.simulate_only;
    if (rank == 0) lines.starting(config->train.display_name(), utc_now());

    // Plan on the ranks that would train (all of them, when K exceeds the job), from the
    // profile the job measured when the configuration asks for one (every rank takes part).
    std::optional<TrainPlan> plan;
    Outcome mine;
    TrainConfig train = config->train;
    if (train.profile_path == kAutoProfile) {
      try {
        record.profile_id = profiles.attach(train);
      } catch (...) {
        mine = outcome_of(std::current_exception(), true);
      }
    }
    // A simulate-only configuration plans on rank 0 alone, unless its order repeats an
    // earlier order's node sequence (then it is skipped, naming that order).
    const bool plans = simulate_only ? rank == 0 : rank < std::min(k, size);
    if (plans && mine.code == OutcomeCode::ok) {
      try {
        if (simulate_only) record.same_sequence_as = same_sequence.earlier_twin(*config);
        if (record.same_sequence_as.empty()) {
          plan = runner.plan(train);
        } else {
          mine = {OutcomeCode::skipped, sweep::same_sequence_reason(record.same_sequence_as)};
        }
      } catch (...) {
        mine = outcome_of(std::current_exception(), true);
      }
    }
    Outcome outcome = agree(world, mine);
    if (outcome.code == OutcomeCode::ok && !simulate_only) outcome = fits_the_job(k, size);
    std::optional<TrainResult> result;
    if (outcome.code == OutcomeCode::ok && !simulate_only) {
      const MPI_Comm comm = comms.first(k, rank);
      mine = {};
      if (comm != MPI_COMM_NULL) {
        try {
          result = runner.train(*plan, comm);
        } catch (...) {
          mine = outcome_of(std::current_exception(), false);
        }
      }
      outcome = agree(world, mine);
    }
    record.status = sweep::status_name(outcome.code);
    record.reason = outcome.message;
    if (plan) record.plan = &*plan;
    if (outcome.code == OutcomeCode::ok && result) record.result = &*result;
    record.wall_s = seconds_since(config_start);

    {
      // SIGTERM/SIGINT during the write take effect right after it (the file then holds
      // this configuration, and the note says so).
      const Unabandonable writing(signals);
      on_rank0_then_agree(world, rank,
                          [&] { summary.append_s += append_config(options.out, record); });
      if (outcome.code == OutcomeCode::ok) ++summary.ok;
      if (outcome.code == OutcomeCode::skipped) ++summary.skipped;
      if (outcome.code == OutcomeCode::failed) ++summary.failed;
      if (outcome.code == OutcomeCode::diverged) ++summary.diverged;
      if (rank == 0) {
        lines.finished(config->train.display_name(), record);
        signals.set_note(": stopped; " + kept_note());
      }
    }
  }
  {
    // The journal (appends to a large file) goes into the file: a finished or stopped
    // sweep leaves one file.
    const Unabandonable writing(signals);
    on_rank0_then_agree(world, rank, [&] { fold_journal(options.out); });
  }
  if (summary.stop_signal != 0 && rank == 0) {
    progress << "interplace sweep: SIGUSR1: stopped after the configuration in flight; "
             << kept_note() << std::flush;
  }
  summary.wall_s = seconds_since(start);
  return summary;
}

}  // namespace interplace::runs
