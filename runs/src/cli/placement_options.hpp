// The options that choose a placement (--order, --placer, --devices, ...), shared by
// `place` and `simulate`, and running the placer with its wall time measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placement.hpp"
#include "interplace/placement/rl_placer.hpp"
#include "interplace/runs/run_defaults.hpp"

namespace interplace::runs::cli {

struct PlacementSelection {
  std::string order;
  std::string placer;
  int devices = 0;
  uint64_t seed = kDefaultSeed;
  int refine_rounds = 2;
  std::string refine_start = "balanced";
  placement::RlOptions rl;     // --rl-*; the estimator is set by run_placement
  std::string rl_policy;       // --rl-policy: start from this saved policy
  std::string rl_save_policy;  // --rl-save-policy: write the trained policy here
  // Micro-batches a device keeps at once under the run's schedule (micro_batches_kept);
  // 0: all of them (GPipe's worst case).
  int kept_micro_batches = 0;
  // --rl-rounds and --rl-hidden as parsed, to tell a value given on the command line from
  // the default: a loaded policy fixes both, so a differing one given is refused.
  const CLI::Option* rl_rounds_option = nullptr;
  const CLI::Option* rl_hidden_option = nullptr;
  const CLI::Option* rl_features_option = nullptr;  // likewise: the policy's inputs
};

void add_placement_options(CLI::App& app, PlacementSelection& selection);
// The rl placer's --rl-* training options (not its policy files), for `place` and
// `simulate`.
void add_rl_options(CLI::App& app, placement::RlOptions& rl_options);
// --aux-head NAME (the auxiliary heads' widths: study, capped, proportional) and its older
// spelling --aux-head-capped (= --aux-head capped), for `simulate` and `train`.
void add_aux_head_options(CLI::App& app, placement::AuxHeadWidth& width, const std::string& group);

// --seed as an unsigned 64-bit number; a negative one is refused rather than wrapped. Sets
// `seed` to kDefaultSeed first, so that every subcommand defaults to the same seed.
CLI::Option* add_seed_option(CLI::App& app, uint64_t& seed, const std::string& description);

// Throws invalid_input for a missing or unknown order or placer (listing the valid ones)
// and for counts out of range. Cheap: call it before building the model.
void check_placement_selection(const PlacementSelection& selection);

struct PlacementRun {
  placement::Order order;
  placement::Placement placement;
  placement::NodeCosts costs;
  double placer_wall_s = 0.0;  // the placer call only, not the order or the costs
  std::optional<placement::RlTrainingLog> rl_log;  // the rl placer's learning curve
};

// The critical-path order weighs nodes by their forward+backward seconds on the device.
// The rl placer's reward is the step time `simulate` reports for the global strategy.
// `micro_batches`: activations kept per device. Throws invalid_input when no placement
// exists (K > nodes, not enough memory, ...).
PlacementRun run_placement(const placement::Graph& graph, const placement::CostModel& cost_model,
                           const PlacementSelection& selection, int micro_batches);

}  // namespace interplace::runs::cli
