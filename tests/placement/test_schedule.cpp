#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/step_estimate.hpp"

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
  // Under a strategy that is not global GPipe gives way to the interlocked 1F1B order
  // (pipelines.hpp: one rule for simulate, train and sweep).
  const Schedule pairwise = schedule_for("pairwise", 3, 2, 1, PipelineKind::gpipe);
  EXPECT_EQ(pairwise.pipeline, PipelineKind::one_f_one_b);
  EXPECT_EQ(pairwise.stage_actions, schedule_for("pairwise", 3, 2).stage_actions);
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

// ZB-H1 (Qi et al., ICLR 2024): 1F1B's order with each backward split into B (input
// gradient) and W (parameter gradients); stage j runs W(m - j) right after B(m) and the
// rest before the step. Written out by hand from that rule for K = 4, M = 8.
TEST(Schedule, ZbH1FourStagesEightMicroBatches) {
  const Schedule schedule = schedule_for("global", 4, 8, 1, PipelineKind::zb_h1);
  const std::vector<std::string> expected = {
      "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7 S",
      "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7 S",
      "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7 S",
      "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7 S",
  };
  for (int j = 0; j < 4; ++j) {
    std::string grid;
    for (const Action& a : schedule.stage_actions[j]) {
      if (a.kind == ActionKind::send || a.kind == ActionKind::receive) continue;
      if (!grid.empty()) grid += ' ';
      grid += grid_label(a, 8);
    }
    EXPECT_EQ(grid, expected[j]) << "stage " << j;
  }
  // B sends its gradient on before the W that follows it; W has no message.
  EXPECT_EQ(texts(schedule.stage_actions[1]).at(16), "bwd 0.1 loss3 upd prop defer");
  EXPECT_EQ(texts(schedule.stage_actions[1]).at(17), "send grad3>0 0.1");
  EXPECT_EQ(texts(schedule.stage_actions[1]).at(18), "bwd-w 0.0");
}

// What the paper states of ZB-H1, for many K and M: every F, B and W of every
// micro-batch once per stage, W(m) after B(m) after F(m); 1F1B's order and messages once
// the W's are taken out; stage j holds at most min(M, K - j) micro-batches between F and
// B (1F1B's activation memory) and min(M, K) between F and W.
TEST(Schedule, ZbH1IsOneFOneBWithTheWeightPassesPutOff) {
  for (int k = 1; k <= 6; ++k) {
    for (int m : {1, 2, 3, 5, 8, 13}) {
      for (int b : {1, 2}) {
        const Schedule zb = schedule_for("global", k, m, b, PipelineKind::zb_h1);
        const Schedule one_f_one_b = schedule_for("global", k, m, b);
        ASSERT_EQ(zb.pipeline, PipelineKind::zb_h1);
        for (int j = 0; j < k; ++j) {
          const std::string where =
              "K " + std::to_string(k) + " M " + std::to_string(m) + " stage " + std::to_string(j);
          std::vector<Action> without_w;
          std::map<std::pair<int, int>, std::array<int, 3>> seen;  // F, B, W counts
          int between_f_and_b = 0, between_f_and_w = 0, max_f_b = 0, max_f_w = 0;
          for (const Action& a : zb.stage_actions[j]) {
            const std::pair<int, int> unit{a.mini_batch, a.micro_batch};
            if (a.kind == ActionKind::forward) {
              ++seen[unit][0];
              max_f_b = std::max(max_f_b, ++between_f_and_b);
              max_f_w = std::max(max_f_w, ++between_f_and_w);
            } else if (a.kind == ActionKind::backward) {
              ASSERT_TRUE(a.defers_parameters && a.updates_parameters) << where;
              ASSERT_EQ(seen[unit][0], 1) << where << ": B before F";
              ++seen[unit][1];
              --between_f_and_b;
            } else if (a.kind == ActionKind::backward_weight) {
              ASSERT_EQ(seen[unit][1], 1) << where << ": W before B";
              ++seen[unit][2];
              --between_f_and_w;
              continue;
            }
            Action plain = a;
            plain.defers_parameters = false;
            without_w.push_back(plain);
          }
          EXPECT_EQ(seen.size(), static_cast<size_t>(m * b)) << where;
          for (const auto& [unit, counts] : seen) {
            EXPECT_EQ(counts, (std::array<int, 3>{1, 1, 1})) << where;
          }
          EXPECT_EQ(without_w, one_f_one_b.stage_actions[j]) << where;
          EXPECT_EQ(max_f_b, std::min(m, k - j)) << where;
          EXPECT_LE(max_f_w, std::min(m, k)) << where;
        }
      }
    }
  }
}

TEST(Schedule, ZbH1IsForTheGlobalStrategyAlone) {
  EXPECT_EQ(pipeline_by_name("zb-h1"), PipelineKind::zb_h1);
  EXPECT_EQ(to_string(PipelineKind::zb_h1), "zb-h1");
  EXPECT_EQ(micro_batches_kept(PipelineKind::zb_h1, 16, 4), 4);
  EXPECT_EQ(micro_batches_kept(PipelineKind::zb_h1, 3, 4), 3);
  EXPECT_EQ(schedule_for("pairwise", 2, 2, 1, PipelineKind::zb_h1).pipeline, PipelineKind::zb_h1);
  for (const char* strategy : {"local", "pairwise", "nwise:2"}) {
    try {
      schedule_for(strategy, 3, 2, 1, PipelineKind::zb_h1);
      ADD_FAILURE() << strategy;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
      const std::string what = error.what();
      EXPECT_NE(what.find("pipeline 'zb-h1' schedules the global strategy only"), std::string::npos)
          << what;
      EXPECT_NE(what.find("1f1b"), std::string::npos) << what;
    }
  }
  try {
    build_schedule({.strategy = "global",
                    .pipeline = PipelineKind::zb_h1,
                    .stage_count = 3,
                    .micro_batches = 2,
                    .interlock = InterlockMode::sum});
    ADD_FAILURE() << "sum";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("interlock mode single"), std::string::npos);
  }
}

Schedule interleaved(int k, int v, int m, int b = 1) {
  return build_schedule({.strategy = "global",
                         .pipeline = PipelineKind::interleaved_1f1b,
                         .stage_count = k,
                         .virtual_stages = v,
                         .micro_batches = m,
                         .mini_batches = b});
}

// The compute actions of a device's list as grid labels ("F3/1": chunk 1's forward of
// micro-batch 3).
std::string compute_row(const std::vector<Action>& actions, int m) {
  std::string row;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::send || a.kind == ActionKind::receive) continue;
    if (!row.empty()) row += ' ';
    row += grid_label(a, m);
  }
  return row;
}

// With one chunk per device the interleaved schedule is 1F1B, list for list (for any M:
// the multiple-of-K rule is the chunks').
TEST(Schedule, InterleavedWithOneVirtualStageIsOneFOneB) {
  for (int k = 1; k <= 6; ++k) {
    for (int m : {1, 2, 3, 5, 8, 13}) {
      for (int b : {1, 2}) {
        const Schedule one = interleaved(k, 1, m, b);
        EXPECT_EQ(one.pipeline, PipelineKind::interleaved_1f1b);
        EXPECT_EQ(one.stage_actions, schedule_for("global", k, m, b).stage_actions)
            << "K " << k << " M " << m << " B " << b;
      }
    }
  }
}

// The interleaved order for K = 4, V = 2, M = 8, written out by hand from schedule.hpp's
// rule: forwards in groups of K = 4
// micro-batches, chunk 0's then chunk 1's; backwards likewise with chunk 1 first; warm-up
// (V-1)K + K-1-j; then one forward, one backward. docs/strategies.md shows it timed.
TEST(Schedule, InterleavedFourDevicesTwoChunksEightMicroBatches) {
  const Schedule schedule = interleaved(4, 2, 8);
  EXPECT_EQ(schedule.stage_count, 4);
  EXPECT_EQ(schedule.virtual_stages, 2);
  const std::vector<std::string> expected = {
      "F0 F1 F2 F3 F0/1 F1/1 F2/1 F3/1 B0/1 F4 B1/1 F5 B2/1 F6 B3/1 F7 B0 F4/1 B1 F5/1 B2 F6/1 "
      "B3 F7/1 B4/1 B5/1 B6/1 B7/1 B4 B5 B6 B7 S",
      "F0 F1 F2 F3 F0/1 F1/1 F2/1 B0/1 F3/1 B1/1 F4 B2/1 F5 B3/1 F6 B0 F7 B1 F4/1 B2 F5/1 B3 F6/1 "
      "B4/1 F7/1 B5/1 B6/1 B7/1 B4 B5 B6 B7 S",
      "F0 F1 F2 F3 F0/1 F1/1 B0/1 F2/1 B1/1 F3/1 B2/1 F4 B3/1 F5 B0 F6 B1 F7 B2 F4/1 B3 F5/1 B4/1 "
      "F6/1 B5/1 F7/1 B6/1 B7/1 B4 B5 B6 B7 S",
      "F0 F1 F2 F3 F0/1 B0/1 F1/1 B1/1 F2/1 B2/1 F3/1 B3/1 F4 B0 F5 B1 F6 B2 F7 B3 F4/1 B4/1 F5/1 "
      "B5/1 F6/1 B6/1 F7/1 B7/1 B4 B5 B6 B7 S",
  };
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(compute_row(schedule.stage_actions[j], 8), expected[j]) << "device " << j;
  }
  // Messages name model stages: device 3's chunk 0 is stage 3, whose activation goes to
  // stage 4, device 0's chunk 1; the gradient of stage 4 comes back from it.
  const std::vector<std::string> device3 = texts(schedule.stage_actions[3]);
  EXPECT_EQ(device3.at(0), "recv act<2 0.0");
  EXPECT_EQ(device3.at(1), "fwd 0.0");
  EXPECT_EQ(device3.at(2), "send act>4 0.0");
  const std::vector<std::string> device0 = texts(schedule.stage_actions[0]);
  EXPECT_EQ(device0.at(8), "recv act<3 0.0 c1");
  EXPECT_EQ(device0.at(9), "fwd 0.0 c1");
  EXPECT_EQ(device0.at(10), "send act>5 0.0 c1");
  EXPECT_EQ(device3.back(), "step 0");
}

// What the interleaved schedule must be, for many K, V, M: on device j every chunk c runs
// model stage cK + j; every (micro-batch, chunk) forward and backward once, the backward
// after the forward and after the later stage's; a message for every stage boundary, sent
// by one side and received by the other; device j keeps at most min(MV, VK - j) chunk
// passes between F and B, device 0 the most, V * micro_batches_kept of them.
TEST(Schedule, InterleavedRunsEveryChunkOnceInMegatronsOrder) {
  for (int k = 1; k <= 5; ++k) {
    for (int v = 1; v <= 4; ++v) {
      for (int groups : {1, 2, 3}) {
        for (int b : {1, 2}) {
          const int m = groups * k;
          const Schedule schedule = interleaved(k, v, m, b);
          const int last = k * v - 1;
          std::map<std::tuple<int, int, int, int, int, int>, int> sent, received;
          int device0_peak = 0;
          for (int j = 0; j < k; ++j) {
            const std::string where = "K " + std::to_string(k) + " V " + std::to_string(v) + " M " +
                                      std::to_string(m) + " device " + std::to_string(j);
            std::map<std::tuple<int, int, int>, std::array<int, 2>> seen;
            int kept = 0, peak = 0;
            for (const Action& a : schedule.stage_actions[j]) {
              ASSERT_GE(a.chunk, 0) << where;
              ASSERT_LT(a.chunk, v) << where;
              const int stage = a.chunk * k + j;
              const std::tuple<int, int, int> unit{a.mini_batch, a.micro_batch, a.chunk};
              if (a.kind == ActionKind::forward) {
                ++seen[unit][0];
                peak = std::max(peak, ++kept);
              } else if (a.kind == ActionKind::backward) {
                ASSERT_EQ(seen[unit][0], 1) << where << ": B before F";
                ++seen[unit][1];
                --kept;
                EXPECT_TRUE(a.updates_parameters) << where;
                EXPECT_EQ(a.propagates_gradient, stage > 0) << where;
                EXPECT_EQ(a.loss_stage, last) << where;
              } else if (a.kind == ActionKind::send || a.kind == ActionKind::receive) {
                const bool activation = a.payload == Payload::activation;
                EXPECT_EQ(a.peer_stage,
                          activation == (a.kind == ActionKind::send) ? stage + 1 : stage - 1)
                    << where;
                const int from = a.kind == ActionKind::send ? stage : a.peer_stage;
                const int to = a.kind == ActionKind::send ? a.peer_stage : stage;
                auto& book = a.kind == ActionKind::send ? sent : received;
                ++book[{from, to, activation ? 0 : 1, a.loss_stage, a.mini_batch, a.micro_batch}];
              }
            }
            EXPECT_EQ(seen.size(), static_cast<size_t>(m * v * b)) << where;
            for (const auto& [unit, counts] : seen) {
              EXPECT_EQ(counts, (std::array<int, 2>{1, 1})) << where;
            }
            EXPECT_EQ(peak, std::min(m * v, v * k - j)) << where;
            if (j == 0) device0_peak = peak;
            EXPECT_LE(peak, device0_peak) << where;
          }
          EXPECT_EQ(sent, received);
          EXPECT_EQ(sent.size(), static_cast<size_t>(2 * last * m * b));
          for (const auto& [key, count] : sent) EXPECT_EQ(count, 1);
          EXPECT_EQ(device0_peak, v * micro_batches_kept(PipelineKind::interleaved_1f1b, m, k, v));
        }
      }
    }
  }
}

TEST(Schedule, InterleavedRefusesWhatItCannotRun) {
  EXPECT_EQ(pipeline_by_name("interleaved-1f1b"), PipelineKind::interleaved_1f1b);
  EXPECT_EQ(micro_batches_kept(PipelineKind::interleaved_1f1b, 16, 4, 2), 4);
  EXPECT_EQ(micro_batches_kept(PipelineKind::interleaved_1f1b, 4, 4, 3), 4);
  EXPECT_EQ(micro_batches_kept(PipelineKind::interleaved_1f1b, 2, 4, 1), 2);
  const auto fails = [](const ScheduleRequest& request, const std::string& text) {
    try {
      build_schedule(request);
      ADD_FAILURE() << text;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
      EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
    }
  };
  const ScheduleRequest ok{.strategy = "global",
                           .pipeline = PipelineKind::interleaved_1f1b,
                           .stage_count = 4,
                           .virtual_stages = 2,
                           .micro_batches = 8};
  EXPECT_NO_THROW(build_schedule(ok));
  ScheduleRequest bad = ok;
  bad.micro_batches = 6;
  fails(bad, "needs micro_batches a multiple of the 4 devices, got 6");
  bad = ok;
  bad.virtual_stages = 0;
  fails(bad, "virtual_stages must be in 1..");
  bad = ok;
  bad.pipeline = PipelineKind::one_f_one_b;
  fails(bad, "virtual_stages 2 is for the pipelines with virtual stages (interleaved-1f1b, ");
  fails(bad, "), not '1f1b'");
  bad = ok;
  bad.interlock = InterlockMode::sum;
  fails(bad, "interlock mode single");
  for (const char* strategy : {"local", "pairwise", "nwise:2"}) {
    bad = ok;
    bad.strategy = strategy;
    fails(bad, "pipeline 'interleaved-1f1b' schedules the global strategy only");
    fails(bad, "HINT: --pipeline 1f1b");
  }
}

TEST(Schedule, RejectsBadRequests) {
  EXPECT_THROW(schedule_for("global", 0, 1), Error);
  EXPECT_THROW(schedule_for("global", 2, 0), Error);
  EXPECT_THROW(schedule_for("global", 2, 1, 0), Error);
  EXPECT_THROW(schedule_for("nwise", 2, 1), Error);
}

// The text form is a schedule's log line: every action of every kind of schedule reads back
// as itself, and what is not an action is refused with the form expected.
TEST(Schedule, ActionTextRoundTrips) {
  std::vector<Schedule> schedules;
  for (int k : {1, 2, 4}) {
    for (int m : {1, 4}) {
      for (PipelineKind p : {PipelineKind::gpipe, PipelineKind::one_f_one_b, PipelineKind::zb_h1}) {
        schedules.push_back(schedule_for("global", k, m, 2, p));
      }
      for (const char* strategy : {"local", "pairwise", "nwise:3"}) {
        for (InterlockMode mode : {InterlockMode::single, InterlockMode::sum}) {
          schedules.push_back(build_schedule({.strategy = strategy,
                                              .stage_count = k,
                                              .micro_batches = m,
                                              .mini_batches = 2,
                                              .interlock = mode}));
        }
      }
    }
  }
  schedules.push_back(build_schedule({.strategy = "global",
                                      .pipeline = PipelineKind::interleaved_1f1b,
                                      .stage_count = 2,
                                      .virtual_stages = 3,
                                      .micro_batches = 4,
                                      .mini_batches = 2}));
  schedules.push_back(build_schedule({.strategy = "global",
                                      .pipeline = PipelineKind::dualpipev,
                                      .stage_count = 2,
                                      .micro_batches = 6,
                                      .mini_batches = 2}));
  {
    const Graph graph = testing::diamond();
    const Placement placement{2, {0, 1, 1, 0}};
    const CostModel model = testing::timed_cost_model(graph, {1, 1, 1, 1}, {1, 1, 1, 1});
    schedules.push_back(node_level_schedule(
        {.strategy = "global",
         .pipeline = PipelineKind::gpipe,
         .stage_count = 2,
         .micro_batches = 2,
         .mini_batches = 2},
        list_schedule_tasks(graph, model.node_costs(graph), model.link(), placement, 2), graph,
        placement));
  }
  std::set<ActionKind> kinds;
  size_t actions = 0;
  for (const Schedule& schedule : schedules) {
    for (const std::vector<Action>& list : schedule.stage_actions) {
      for (const Action& action : list) {
        const std::string text = to_string(action);
        EXPECT_EQ(parse_action(text), action)
            << text << " reads back as " << to_string(parse_action(text));
        kinds.insert(action.kind);
        ++actions;
      }
    }
  }
  EXPECT_EQ(kinds.size(), 9u);  // every kind of action occurred
  EXPECT_GT(actions, 1000u);
  for (const char* bad : {"", "fwd", "fwd 0", "fwd 0.x", "fwd -1.0", "bwd 0.1", "bwd 0.1 upd",
                          "bwd 0.1 loss3 prop upd", "send act 0.1", "send act<1 0.1",
                          "recv grad<1 0.1", "send grad2>x 0.1", "fwd 0.1 c0", "fwd 0.1 n", "step",
                          "step 0 1", "fwd 0.1 extra", "fwd  0.1", "jump 0.1"}) {
    try {
      parse_action(bad);
      ADD_FAILURE() << "'" << bad << "' was read as an action";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_input) << bad;
      EXPECT_NE(std::string(error.what()).find("HINT: write it as to_string prints one"),
                std::string::npos)
          << error.what();
    }
  }
}

// An overlapped pair (DualPipeV's forward_backward): its text, read back, its halves and
// its grid label; a pair of anything but a forward and a backward of one mini-batch is
// refused.
TEST(Schedule, OverlappedPairsReadBackAndSplitIntoTheirHalves) {
  const Action forward{.kind = ActionKind::forward, .mini_batch = 1, .micro_batch = 3, .chunk = 1};
  const Action backward{.kind = ActionKind::backward,
                        .mini_batch = 1,
                        .micro_batch = 0,
                        .loss_stage = 7,
                        .updates_parameters = true,
                        .propagates_gradient = true};
  const Action pair = overlapped(forward, backward);
  EXPECT_EQ(pair.kind, ActionKind::forward_backward);
  EXPECT_EQ(to_string(pair), "fwd-bwd 1.3 c1 + 1.0 loss7 upd prop");
  EXPECT_EQ(parse_action(to_string(pair)), pair);
  EXPECT_EQ(forward_half(pair), forward);
  EXPECT_EQ(backward_half(pair), backward);
  EXPECT_EQ(compute_halves(pair), (std::vector<Action>{forward, backward}));
  EXPECT_EQ(compute_halves(forward), std::vector<Action>{forward});
  EXPECT_EQ(grid_label(pair, 4), "F7/1+B4");
  Action deferred = backward;
  deferred.chunk = 1;
  deferred.defers_parameters = true;
  EXPECT_EQ(parse_action("fwd-bwd 1.3 + 1.0 c1 loss7 upd prop defer"),
            overlapped({.kind = ActionKind::forward, .mini_batch = 1, .micro_batch = 3}, deferred));
  for (const char* bad : {"fwd-bwd 1.3", "fwd-bwd 1.3 + 2.0 loss7 upd", "fwd-bwd 1.3 + loss7",
                          "fwd-bwd 1.3 - 1.0 loss7"}) {
    EXPECT_THROW(parse_action(bad), Error) << bad;
  }
  EXPECT_THROW(overlapped(backward, forward), Error);
  Action other = backward;
  other.mini_batch = 2;
  EXPECT_THROW(overlapped(forward, other), Error);
}

}  // namespace
}  // namespace interplace::placement
