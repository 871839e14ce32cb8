#include <gtest/gtest.h>

#include <map>
#include <set>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {
namespace {

std::vector<std::string> texts(const std::vector<Action>& actions) {
  std::vector<std::string> out;
  for (const Action& action : actions) out.push_back(to_string(action));
  return out;
}

Schedule schedule_for(const std::string& strategy, int k, int m, int b = 1,
                      PipelineKind pipeline = PipelineKind::one_f_one_b) {
  return build_schedule({.strategy = strategy,
                         .pipeline = pipeline,
                         .stage_count = k,
                         .micro_batches = m,
                         .mini_batches = b});
}

TEST(Schedule, StrategyNamesToReach) {
  EXPECT_EQ(strategy_reach("global", 4), 3);
  EXPECT_EQ(strategy_reach("local", 4), 0);
  EXPECT_EQ(strategy_reach("pairwise", 4), 1);
  EXPECT_EQ(strategy_reach("nwise:1", 4), 0);
  EXPECT_EQ(strategy_reach("nwise:3", 4), 2);
  EXPECT_EQ(strategy_reach("nwise:9", 4), 3);
  EXPECT_EQ(strategy_reach("pairwise", 1), 0);
  for (const char* bad : {"nwise:0", "nwise:", "nwise:2x", "nwise:-1", "Global", "interlock"}) {
    try {
      strategy_reach(bad, 4);
      ADD_FAILURE() << bad;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
      EXPECT_NE(std::string(error.what()).find("nwise:N"), std::string::npos);
    }
  }
  EXPECT_THROW(strategy_reach("global", 0), Error);
  EXPECT_EQ(pipeline_by_name("gpipe"), PipelineKind::gpipe);
  EXPECT_THROW(pipeline_by_name("zero-bubble"), Error);
}

// Parsed once into kind and N; the name it prints is the one it was parsed from.
TEST(Schedule, StrategiesParseIntoKindAndN) {
  EXPECT_EQ(Strategy("local").kind, StrategyKind::local);
  const Strategy nwise("nwise:12");
  EXPECT_EQ(nwise.kind, StrategyKind::nwise);
  EXPECT_EQ(nwise.n, 12);
  for (const char* name : {"global", "local", "pairwise", "nwise:1", "nwise:12"}) {
    EXPECT_EQ(to_string(Strategy(name)), name);
  }
  EXPECT_EQ(Strategy(StrategyKind::global), Strategy());
  EXPECT_THROW(Strategy(StrategyKind::nwise, 0), Error);
  EXPECT_EQ(strategy_reach(Strategy(StrategyKind::nwise, 2), 4), 1);
}

TEST(Schedule, Global1F1BTwoStagesThreeMicroBatches) {
  const Schedule schedule = schedule_for("global", 2, 3);
  EXPECT_EQ(schedule.has_aux_head, (std::vector<bool>{false, false}));
  EXPECT_EQ(texts(schedule.stage_actions[0]),
            (std::vector<std::string>{"fwd 0.0", "send act>1 0.0",  // warm-up
                                      "fwd 0.1", "send act>1 0.1", "recv grad1<1 0.0",
                                      "bwd 0.0 loss1 upd", "fwd 0.2", "send act>1 0.2",
                                      "recv grad1<1 0.1", "bwd 0.1 loss1 upd", "recv grad1<1 0.2",
                                      "bwd 0.2 loss1 upd", "step 0"}));
  EXPECT_EQ(
      texts(schedule.stage_actions[1]),
      (std::vector<std::string>{
          "recv act<0 0.0", "fwd 0.0", "bwd 0.0 loss1 upd prop", "send grad1>0 0.0",
          "recv act<0 0.1", "fwd 0.1", "bwd 0.1 loss1 upd prop", "send grad1>0 0.1",
          "recv act<0 0.2", "fwd 0.2", "bwd 0.2 loss1 upd prop", "send grad1>0 0.2", "step 0"}));
}

TEST(Schedule, GlobalGPipeRunsAllForwardsFirst) {
  const Schedule schedule = schedule_for("global", 2, 2, 1, PipelineKind::gpipe);
  EXPECT_EQ(texts(schedule.stage_actions[1]),
            (std::vector<std::string>{"recv act<0 0.0", "fwd 0.0", "recv act<0 0.1", "fwd 0.1",
                                      "bwd 0.0 loss1 upd prop", "send grad1>0 0.0",
                                      "bwd 0.1 loss1 upd prop", "send grad1>0 0.1", "step 0"}));
  EXPECT_EQ(texts(schedule.stage_actions[0]),
            (std::vector<std::string>{"fwd 0.0", "send act>1 0.0", "fwd 0.1", "send act>1 0.1",
                                      "recv grad1<1 0.0", "bwd 0.0 loss1 upd", "recv grad1<1 0.1",
                                      "bwd 0.1 loss1 upd", "step 0"}));
  EXPECT_THROW(schedule_for("pairwise", 3, 2, 1, PipelineKind::gpipe), Error);
}

TEST(Schedule, PairwiseThreeStages) {
  // Body 0 is trained by stage 1's aux loss (through stage 1's body, not updating it);
  // bodies 1 and 2 by the network's loss. Stages 0 and 1 have aux heads (as the study's
  // code): stage 0's trains only itself, so its loss starts no backward pass ("loss0").
  const Schedule schedule = schedule_for("pairwise", 3, 1);
  EXPECT_EQ(schedule.has_aux_head, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(texts(schedule.stage_actions[0]),
            (std::vector<std::string>{"fwd 0.0", "send act>1 0.0", "aux-fwd 0.0", "aux-bwd 0.0",
                                      "recv grad1<1 0.0", "bwd 0.0 loss1 upd", "step 0"}));
  EXPECT_EQ(texts(schedule.stage_actions[1]),
            (std::vector<std::string>{"recv act<0 0.0", "fwd 0.0", "send act>2 0.0", "aux-fwd 0.0",
                                      "aux-bwd 0.0", "bwd 0.0 loss1 prop", "send grad1>0 0.0",
                                      "recv grad2<2 0.0", "bwd 0.0 loss2 upd", "step 0"}));
  EXPECT_EQ(texts(schedule.stage_actions[2]),
            (std::vector<std::string>{"recv act<1 0.0", "fwd 0.0", "bwd 0.0 loss2 upd prop",
                                      "send grad2>1 0.0", "step 0"}));
}

TEST(Schedule, LocalStagesNeverReceiveGradients) {
  const Schedule schedule = schedule_for("local", 3, 2, 2);
  EXPECT_EQ(schedule.has_aux_head, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(texts(schedule.stage_actions[0]), (std::vector<std::string>{"fwd 0.0",
                                                                        "send act>1 0.0",
                                                                        "aux-fwd 0.0",
                                                                        "aux-bwd 0.0",
                                                                        "bwd 0.0 loss0 upd",
                                                                        "fwd 0.1",
                                                                        "send act>1 0.1",
                                                                        "aux-fwd 0.1",
                                                                        "aux-bwd 0.1",
                                                                        "bwd 0.1 loss0 upd",
                                                                        "step 0",
                                                                        "fwd 1.0",
                                                                        "send act>1 1.0",
                                                                        "aux-fwd 1.0",
                                                                        "aux-bwd 1.0",
                                                                        "bwd 1.0 loss0 upd",
                                                                        "fwd 1.1",
                                                                        "send act>1 1.1",
                                                                        "aux-fwd 1.1",
                                                                        "aux-bwd 1.1",
                                                                        "bwd 1.1 loss0 upd",
                                                                        "step 1"}));
}

// docs/strategies.md: body k is trained by the loss of stage min(k+d, K-1), and that loss's
// gradient passes through stages k+d-1 .. k+1 without updating them.
TEST(Schedule, EveryBodyIsTrainedByTheLossItsReachNames) {
  for (int k = 1; k <= 6; ++k) {
    for (int d = 0; d < k + 1; ++d) {
      const std::string strategy = "nwise:" + std::to_string(d + 1);
      const Schedule schedule = schedule_for(strategy, k, 3, 2);
      const int reach = std::min(d, k - 1);
      ASSERT_EQ(schedule.reach, reach);
      std::map<std::tuple<int, int, int, int>, int> sends;  // from, to, loss, unit
      for (int j = 0; j < k; ++j) {
        std::map<std::pair<int, int>, int> updates;  // unit -> updating passes
        std::map<std::pair<int, int>, int> forwards;
        for (const Action& action : schedule.stage_actions[j]) {
          const auto unit = std::make_pair(action.mini_batch, action.micro_batch);
          if (action.kind == ActionKind::forward) ++forwards[unit];
          if (action.kind == ActionKind::backward) {
            EXPECT_GE(action.loss_stage, j);
            const int destination =
                action.loss_stage == k - 1 ? std::max(0, k - 1 - reach) : action.loss_stage - reach;
            EXPECT_GE(j, destination) << strategy << " K " << k;
            if (action.updates_parameters) {
              ++updates[unit];
              EXPECT_EQ(action.loss_stage, std::min(j + reach, k - 1)) << strategy << " K " << k;
            }
            EXPECT_EQ(action.propagates_gradient, j > destination);
          }
          if (action.kind == ActionKind::send) {
            ++sends[{j, action.peer_stage, action.loss_stage,
                     action.mini_batch * 10 + action.micro_batch}];
          }
          if (action.kind == ActionKind::receive) {
            --sends[{action.peer_stage, j, action.loss_stage,
                     action.mini_batch * 10 + action.micro_batch}];
          }
        }
        EXPECT_EQ(forwards.size(), 6u);
        for (const auto& [unit, count] : forwards) EXPECT_EQ(count, 1);
        EXPECT_EQ(updates.size(), 6u) << strategy << " K " << k << " stage " << j;
        for (const auto& [unit, count] : updates) EXPECT_EQ(count, 1) << strategy;
        EXPECT_EQ(schedule.stage_actions[j].back().kind, ActionKind::optimizer_step);
      }
      for (const auto& [message, balance] : sends) EXPECT_EQ(balance, 0) << strategy << " K " << k;
    }
  }
}

// Interlock mode sum: body k is trained by the sum of the losses of stages k ..
// min(k+d, K-1), so every backward pass updates the body it runs on, and the sources of
// the passes that update body k are exactly those stages (heads on 0 .. K-2).
TEST(Schedule, SumModeTrainsEachBodyByTheSumOfTheLossesInReach) {
  for (int k = 1; k <= 6; ++k) {
    for (int d = 0; d < k; ++d) {
      const std::string strategy = "nwise:" + std::to_string(d + 1);
      const Schedule schedule = build_schedule({.strategy = strategy,
                                                .stage_count = k,
                                                .micro_batches = 3,
                                                .mini_batches = 2,
                                                .interlock = InterlockMode::sum});
      EXPECT_EQ(schedule.interlock, InterlockMode::sum);
      std::map<std::tuple<int, int, int, int>, int> sends;  // from, to, loss, unit
      for (int j = 0; j < k; ++j) {
        EXPECT_EQ(schedule.has_aux_head[j], j < k - 1) << strategy << " K " << k;
        std::map<std::pair<int, int>, std::set<int>> sources;  // unit -> losses training body j
        for (const Action& action : schedule.stage_actions[j]) {
          const int unit = action.mini_batch * 10 + action.micro_batch;
          if (action.kind == ActionKind::backward) {
            EXPECT_TRUE(action.updates_parameters) << strategy << " K " << k << " stage " << j;
            const auto unit_key = std::make_pair(action.mini_batch, action.micro_batch);
            EXPECT_TRUE(sources[unit_key].insert(action.loss_stage).second);
          }
          if (action.kind == ActionKind::send) {
            ++sends[{j, action.peer_stage, action.loss_stage, unit}];
          }
          if (action.kind == ActionKind::receive) {
            --sends[{action.peer_stage, j, action.loss_stage, unit}];
          }
        }
        std::set<int> expected;
        for (int t = j; t <= std::min(j + d, k - 1); ++t) expected.insert(t);
        EXPECT_EQ(sources.size(), 6u);
        for (const auto& [unit, losses] : sources) {
          EXPECT_EQ(losses, expected) << strategy << " K " << k << " stage " << j;
        }
      }
      for (const auto& [message, balance] : sends) EXPECT_EQ(balance, 0) << strategy << " K " << k;
    }
  }
}

TEST(Schedule, SumModeOfLocalIsLocalAndNamesParse) {
  const Schedule single = schedule_for("local", 3, 2);
  const Schedule sum = build_schedule(
      {.strategy = "local", .stage_count = 3, .micro_batches = 2, .interlock = InterlockMode::sum});
  EXPECT_EQ(sum.stage_actions, single.stage_actions);
  EXPECT_EQ(interlock_mode_by_name("sum"), InterlockMode::sum);
  EXPECT_EQ(to_string(interlock_mode_by_name("single")), "single");
  EXPECT_THROW(interlock_mode_by_name("product"), Error);
}

TEST(Schedule, NwiseKIsGlobalAndNamesAgree) {
  for (int k = 1; k <= 5; ++k) {
    for (PipelineKind pipeline : {PipelineKind::gpipe, PipelineKind::one_f_one_b}) {
      const Schedule global = schedule_for("global", k, 4, 2, pipeline);
      EXPECT_EQ(schedule_for("nwise:" + std::to_string(k), k, 4, 2, pipeline).stage_actions,
                global.stage_actions);
      EXPECT_EQ(schedule_for("nwise:" + std::to_string(k + 3), k, 4, 2, pipeline).stage_actions,
                global.stage_actions);
    }
    EXPECT_EQ(schedule_for("local", k, 3).stage_actions,
              schedule_for("nwise:1", k, 3).stage_actions);
    EXPECT_EQ(schedule_for("pairwise", k, 3).stage_actions,
              schedule_for("nwise:2", k, 3).stage_actions);
  }
}

TEST(Schedule, RejectsBadRequests) {
  EXPECT_THROW(schedule_for("global", 0, 1), Error);
  EXPECT_THROW(schedule_for("global", 2, 0), Error);
  EXPECT_THROW(schedule_for("global", 2, 1, 0), Error);
  EXPECT_THROW(schedule_for("nwise", 2, 1), Error);
}

}  // namespace
}  // namespace interplace::placement
