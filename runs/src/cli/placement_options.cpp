#include "placement_options.hpp"

#include <charconv>
#include <functional>
#include <utility>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/placing.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
void add_rl_options(CLI::App& app, placement::RlOptions& rl_options) {
  const char* rl = "Placement: rl placer (docs/placers.md#rl)";
  // Each setting with its default shown.
  const auto setting = [&app, rl](const std::string& flag, auto& value, const std::string& help) {
    app.add_option(flag, value, help)->capture_default_str()->group(rl);
  };
  setting("--rl-episodes", rl_options.episodes, "training episodes");
  setting("--rl-rounds", rl_options.rounds, "message-passing rounds");
  setting("--rl-hidden", rl_options.hidden, "width of the policy's hidden layer");
  setting("--rl-learning-rate", rl_options.learning_rate,
          "Adam learning rate of the first episode");
  setting("--rl-final-learning-rate", rl_options.final_learning_rate,
          "learning rate of the last episode (linear decay)");
  setting("--rl-entropy", rl_options.entropy_weight,
          "weight of the policy's entropy in the objective");
  setting("--rl-memory-penalty", rl_options.memory_penalty,
          "weight of the penalty for bytes above a device's capacity");
  setting("--rl-time-budget", rl_options.time_budget_s,
          "seconds after which training stops (0: none; results then depend on speed)");
  setting("--rl-groups", rl_options.groups,
          "coarsen graphs of more nodes to this many groups and place groups (0: never)");
  setting("--rl-fine-episodes", rl_options.fine_episodes,
          "coarse to fine: the last N episodes on a grouped graph place finer groups (0: one "
          "level)");
  setting("--rl-fine-factor", rl_options.fine_factor,
          "coarse to fine: the fine level's groups per --rl-groups group (> 1)");
  setting("--rl-start", rl_options.start,
          "start placement: random, device-0 (every node on device 0), or a placer: " +
              join(placement::placer_names()));
  // Named choices become enumerators here, once.
  auto named = [&](const std::string& flag, const std::vector<std::string>& names,
                   const std::string& current, std::function<void(const std::string&)> set,
                   const std::string& description) {
    app.add_option_function<std::string>(flag, std::move(set), description + ": " + join(names))
        ->check(CLI::IsMember(names))
        ->default_str(current)
        ->group(rl);
  };
  named(
      "--rl-episode-start", placement::rl_episode_start_names(),
      to_string(rl_options.episode_start),
      [&rl_options](const std::string& name) {
        rl_options.episode_start = placement::rl_episode_start_by_name(name);
      },
      "where every episode starts (best: the best placement found so far)");
  named(
      "--rl-reward", placement::rl_reward_names(), to_string(rl_options.reward),
      [&rl_options](const std::string& name) {
        rl_options.reward = placement::rl_reward_by_name(name);
      },
      "reward of a move (docs/placers.md#rl)");
  named(
      "--rl-baseline", placement::rl_baseline_names(), to_string(rl_options.baseline),
      [&rl_options](const std::string& name) {
        rl_options.baseline = placement::rl_baseline_by_name(name);
      },
      "baseline of the returns (recent: the last 10 episodes; all-so-far: every training "
      "episode, the current included)");
  named(
      "--rl-entropy-schedule", placement::rl_entropy_schedule_names(),
      to_string(rl_options.entropy_schedule),
      [&rl_options](const std::string& name) {
        rl_options.entropy_schedule = placement::rl_entropy_schedule_by_name(name);
      },
      "entropy weight over the episodes (linear: decayed to 0)");
  named(
      "--rl-features", placement::rl_features_names(), to_string(rl_options.features),
      [&rl_options](const std::string& name) {
        rl_options.features = placement::rl_features_by_name(name);
      },
      "what the policy sees (lookahead: also each device's step time after the move)");
  setting("--rl-candidate-learning-rate", rl_options.candidate_learning_rate,
          "Adam learning rate of the candidate-device weights (lookahead), first episode");
  setting("--rl-discount", rl_options.discount,
          "discount of later rewards in a step's return (1: the return to go)");
  setting("--rl-eval-every", rl_options.eval_every,
          "every Nth episode is an argmax evaluation without an update (0: none)");
  setting("--rl-clip-norm", rl_options.clip_norm,
          "clip the gradient summed over an episode's steps to this global norm (0: none)");
}

void add_placement_options(CLI::App& app, PlacementSelection& s) {
  const char* group = "Placement";
  app.add_option("--order", s.order, "traversal order: " + join(placement::order_names()))
      ->group(group);
  app.add_option("--placer", s.placer, "placer: " + join(placement::placer_names()))->group(group);
  app.add_option("--devices", s.devices, "number of devices K (stages)")->group(group);
  add_seed_option(app, s.seed, "seed of the random orders and placer")->group(group);
  app.add_option("--refine-rounds", s.refine_rounds, "rounds of the refine placer")
      ->capture_default_str()
      ->group(group);
  app.add_option("--refine-start", s.refine_start,
                 "placer whose result refine starts from: " + join(placement::placer_names()))
      ->capture_default_str()
      ->group(group);
  add_rl_options(app, s.rl);
  s.rl_rounds_option = app.get_option("--rl-rounds");
  s.rl_hidden_option = app.get_option("--rl-hidden");
  s.rl_features_option = app.get_option("--rl-features");
  const char* rl = "Placement: rl placer (docs/placers.md#rl)";
  app.add_option("--rl-policy", s.rl_policy,
                 "start from this saved policy (docs/placers.md#policy-files); with "
                 "--rl-episodes 0 place with it untrained")
      ->group(rl);
  app.add_option("--rl-save-policy", s.rl_save_policy, "write the trained policy to this file")
      ->group(rl);
}

void add_aux_head_options(CLI::App& app, placement::AuxHeadWidth& width, const std::string& group) {
  CLI::Option* named =
      app.add_option_function<std::string>(
             "--aux-head",
             [&width](const std::string& name) { width = placement::aux_head_width_by_name(name); },
             "auxiliary heads' widths (docs/strategies.md): study (128/64 channels, the "
             "default), capped (at the boundary tensor's), proportional (2C/C for C channels)")
          ->check(CLI::IsMember(placement::aux_head_width_names()))
          ->group(group);
  app.add_flag_callback(
         "--aux-head-capped", [&width] { width = placement::AuxHeadWidth::capped; },
         "the same as --aux-head capped")
      ->excludes(named)
      ->group(group);
}

CLI::Option* add_seed_option(CLI::App& app, uint64_t& seed, const std::string& description) {
  // CLI11 would wrap "-1" and saturate "2^64" into a valid-looking seed.
  const CLI::Validator uint64_text(
      [](std::string& text) {
        uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        return error == std::errc() && end == text.data() + text.size()
                   ? std::string()
                   : "must be an integer from 0 to 18446744073709551615, got " + text;
      },
      "");
  seed = kDefaultSeed;
  return app.add_option("--seed", seed, description + " (the same default in every subcommand)")
      ->check(uint64_text)
      ->capture_default_str();
}

void check_placement_selection(const PlacementSelection& s) {
  if (s.order.empty()) {
    throw_invalid("--order is required (valid: " + join(placement::order_names()) + ")");
  }
  placement::order_by_name(s.order);
  if (s.placer.empty()) {
    throw_invalid("--placer is required (valid: " + join(placement::placer_names()) + ")");
  }
  const placement::PlacerKind placer = placement::placer_kind_by_name(s.placer);
  if (s.devices < 1) {
    throw_invalid("--devices is required and must be >= 1, got " + std::to_string(s.devices));
  }
  if (s.refine_rounds < 0) {
    throw_invalid("--refine-rounds must be >= 0, got " + std::to_string(s.refine_rounds));
  }
  if (placer == placement::PlacerKind::rl) {
    placement::RlOptions options = s.rl;
    if (!s.rl_policy.empty()) options.initial = placement::RlSavedPolicy{};
    placement::check_rl_options(options);
  } else if (!s.rl_policy.empty() || !s.rl_save_policy.empty()) {
    throw_invalid("--rl-policy and --rl-save-policy need --placer rl");
  }
  if (placer == placement::PlacerKind::refine &&
      placement::placer_kind_by_name(s.refine_start) == placement::PlacerKind::refine) {
    throw_invalid("--refine-start cannot be refine itself");
  }
}

namespace {

// A saved policy's message-passing rounds, hidden width and features are its architecture:
// an explicit --rl-rounds, --rl-hidden or --rl-features that differs would otherwise be
// silently ignored.
void refuse_overridden_architecture(const PlacementSelection& s,
                                    const placement::RlSavedPolicy& policy) {
  auto check = [&](const CLI::Option* option, const std::string& flag, int given, int saved,
                   const char* what) {
    if (option == nullptr || option->count() == 0 || given == saved) return;
    throw_invalid(flag + " " + std::to_string(given) + " differs from the " + what +
                  " of the policy in '" + s.rl_policy + "' (" + std::to_string(saved) +
                  "), which a loaded policy keeps. HINT: drop " + flag +
                  ", or train a new policy without --rl-policy");
  };
  check(s.rl_rounds_option, "--rl-rounds", s.rl.rounds, policy.rounds, "message-passing rounds");
  check(s.rl_hidden_option, "--rl-hidden", s.rl.hidden, policy.hidden, "hidden width");
  const placement::RlFeatures saved =
      policy.candidates > 0 ? placement::RlFeatures::lookahead : placement::RlFeatures::placeto;
  if (s.rl_features_option != nullptr && s.rl_features_option->count() > 0 &&
      s.rl.features != saved) {
    throw_invalid("--rl-features " + to_string(s.rl.features) + " differs from the features of " +
                  "the policy in '" + s.rl_policy + "' (" + to_string(saved) +
                  "), which a loaded policy keeps. HINT: drop --rl-features, or train a new " +
                  "policy without --rl-policy");
  }
}

}  // namespace

PlacementRun run_placement(const placement::Graph& graph, const placement::CostModel& cost_model,
                           const PlacementSelection& s, int micro_batches) {
  check_placement_selection(s);
  const placement::PlacerKind placer = placement::placer_kind_by_name(s.placer);
  placement::OrderedGraph ordered =
      placement::order_graph(graph, cost_model, placement::order_by_name(s.order), s.seed);
  placement::PlacementRequest request{.device_count = s.devices, .cost_model = cost_model};
  request.micro_batches = micro_batches;
  request.kept_micro_batches = s.kept_micro_batches;
  request.seed = s.seed;
  request.refine_start = s.refine_start;
  request.refine_rounds = s.refine_rounds;
  placement::RlTrainingLog rl_log;
  if (placer == placement::PlacerKind::rl) {
    request.rl = s.rl;
    if (!s.rl_policy.empty()) {
      request.rl.initial = placement::read_rl_policy(s.rl_policy);
      refuse_overridden_architecture(s, *request.rl.initial);
    }
    request.rl_log = &rl_log;
  }
  PlacementRun run;
  run.placement =
      placement::run_placer(graph, ordered, placer, std::move(request), &run.placer_wall_s);
  run.order = std::move(ordered.order);
  run.costs = std::move(ordered.costs);
  if (placer == placement::PlacerKind::rl) {
    if (!s.rl_save_policy.empty()) placement::write_rl_policy(s.rl_save_policy, rl_log.policy);
    run.rl_log = rl_log;
  }
  return run;
}

}  // namespace interplace::runs::cli
