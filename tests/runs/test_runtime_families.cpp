// The seeded families (docs/models.md) on the MPI runtime: weights shared across time
// steps whose heads sit on other ranks than their owner, and the -small presets training
// on the real data sets.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <numeric>

#include "mpi_test_support.hpp"

namespace interplace::runs {
namespace {

using testing::losses;
using testing::train_on;
using testing::world_rank;
using testing::world_size;

TrainConfig small_recurrent() {
  TrainConfig c;
  c.model = "enas-rnn-small:3";
  c.model_options.sequence_length = 4;
  c.model_options.dim = 64;  // the cell, not the head, dominates: contiguous splits steps
  c.batch_size = 4;
  c.warmup_steps = 0;
  c.steps = 6;
  c.optimizer = placement::OptimizerKind::adamw;
  c.learning_rate = 3e-3;
  c.threads_per_rank = 1;
  return c;
}

// Heads of a shared weight on other ranks than its owner, under this plan.
int heads_away_from_owner(const TrainPlan& plan) {
  int away = 0;
  for (const placement::Node& n : plan.graph.nodes()) {
    if (n.op != "tied_linear") continue;
    const auto owner = plan.graph.id_of(std::get<std::string>(n.attributes.at("tied_to")));
    away += plan.placement.device_of_node[static_cast<size_t>(n.id)] !=
                    plan.placement.device_of_node[static_cast<size_t>(owner)]
                ? 1
                : 0;
  }
  return away;
}

// The unrolled recurrent cell's weights are shared by every step; with the steps spread
// over the ranks (random: heads of most weights on every rank; contiguous: the later
// steps' heads on the later ranks) a P-rank run's losses equal the 1-rank run's.
// (round-robin would not do: every step has an even number of nodes, so on 2 ranks each
// head lands on its owner's rank.)
TEST(Runtime, GlobalMatchesSingleRecurrentWithSharedWeightsAcrossRanks) {
  const int p = world_size();
  for (const char* placer : {"random", "contiguous"}) {
    for (int m : {1, 2}) {
      TrainConfig c = small_recurrent();
      c.placer = placer;
      c.micro_batches = m;
      const std::string what = std::string(placer) + " M=" + std::to_string(m);
      TrainConfig probe = c;
      probe.devices = p;
      EXPECT_GT(heads_away_from_owner(plan_config(probe)), 0) << what;
      const TrainResult single = train_on(c, 1);
      const TrainResult many = train_on(c, p);
      testing::expect_losses_near(many, single, 1e-5, 1e-7, what + " P=" + std::to_string(p));
    }
  }
}

// Done-when of issue #19: the -small preset of every family trains over the ranks with
// the global strategy on its real data set, and its loss falls over 50 steps.
TEST(Runtime, FamiliesSmallPresetsLearnOnRealData) {
  struct Case {
    const char* model;
    const char* dataset;
    double learning_rate;
  };
  for (const Case& k :
       {Case{"enas-cnn-small:1", "fashion-mnist", 3e-3}, Case{"enas-rnn-small:1", "text", 1e-2},
        Case{"nmt-small:1", "text", 1e-2}}) {
    TrainConfig c;
    c.model = k.model;
    c.dataset = k.dataset;
    c.placer = "contiguous";
    c.batch_size = 16;
    c.warmup_steps = 0;
    c.steps = 50;
    c.optimizer = placement::OptimizerKind::adamw;
    c.learning_rate = k.learning_rate;
    c.threads_per_rank = 1;
    const TrainResult r = train_on(c, world_size());
    if (world_rank() != 0) continue;
    const std::vector<double> l = losses(r);
    ASSERT_EQ(l.size(), 50u) << k.model;
    // Means of the first and last 10 steps: single batches are noisy.
    const double first = std::accumulate(l.begin(), l.begin() + 10, 0.0) / 10;
    const double last = std::accumulate(l.end() - 10, l.end(), 0.0) / 10;
    std::cout << k.model << " on " << k.dataset << ": mean loss of steps 0-9 " << first
              << ", of steps 40-49 " << last << "\n";
    EXPECT_LT(last, 0.85 * first) << k.model << ": first " << first << ", last " << last;
  }
}

}  // namespace
}  // namespace interplace::runs
