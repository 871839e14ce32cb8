// The runtime executes the plan's schedule, the object the simulator simulates: every
// rank records the actions it ran (TrainResult::executed_actions), and they must be its
// schedule.stage_actions[rank] once per step, messages included (registered on 2, 3 and
// 4 ranks: runs.mpi.executes_schedule.np<P>).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mpi_test_support.hpp"

namespace interplace::runs {
namespace {

using placement::Action;
using placement::ActionKind;

std::vector<Action> repeated(const std::vector<Action>& actions, int times) {
  std::vector<Action> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), actions.begin(), actions.end());
  return out;
}

std::string listing(const std::vector<Action>& actions) {
  std::string out;
  for (const Action& a : actions) out += "  " + placement::to_string(a) + "\n";
  return out;
}

void expect_executes_schedule(const TrainPlan& plan, const std::string& what) {
  const TrainResult result = testing::train_plan_on(plan);
  const int rank = testing::world_rank();
  if (rank >= plan.config.devices) return;
  const std::vector<Action>& mine = plan.schedule.stage_actions[static_cast<size_t>(rank)];
  const std::vector<Action> expected = repeated(mine, plan.config.warmup_steps + plan.config.steps);
  EXPECT_EQ(result.executed_actions, expected)
      << what << " rank " << rank << ": executed\n"
      << listing(result.executed_actions) << "scheduled (per step)\n"
      << listing(mine);
  // Not vacuous: on a stage chain every rank moved its tensors at message actions.
  if (plan.config.devices > 1 && plan.schedule.messages == placement::MessageLevel::stage) {
    const auto messages = std::count_if(mine.begin(), mine.end(), [](const Action& a) {
      return a.kind == ActionKind::send || a.kind == ActionKind::receive;
    });
    EXPECT_GT(messages, 0) << what << " rank " << rank;
  }
}

struct Choice {
  const char* strategy;
  const char* pipeline;
  const char* interlock;
  bool more_micro_batches_than_ranks = false;  // M = P + 2 instead of 2 (V > 1: P + 1)
  int virtual_stages = 1;                      // V > 1: M = 2P (a multiple of P)
};

TEST(Runtime, ExecutesThePlansSchedule) {
  const int p = testing::world_size();
  const std::vector<Choice> choices = {
      {"global", "gpipe", "single"},
      {"global", "1f1b", "single"},
      {"local", "1f1b", "single"},
      {"pairwise", "1f1b", "single"},
      {"nwise:3", "1f1b", "single"},
      {"local", "1f1b", "sum"},
      {"pairwise", "1f1b", "sum"},
      // ZB-H1 with M < K (every W after the last B on the late stages) and M > K (W's
      // between the F's and B's of the steady state).
      {"global", "zb-h1", "single"},
      {"global", "zb-h1", "single", true},
      // Interleaved 1F1B: every rank runs 2 and 3 chunks of a 2P- and 3P-stage chain, their
      // messages crossing from the last rank back to rank 0.
      {"global", "interleaved-1f1b", "single", false, 2},
      {"global", "interleaved-1f1b", "single", false, 3},
      // Looped BFS: every forward of a chunk before the next chunk's, backwards reversed;
      // also with M = P + 1, not a multiple of P.
      {"global", "looped-bfs", "single", false, 2},
      {"global", "looped-bfs", "single", true, 3},
      // Interleaved zero bubble: interleaved 1F1B's order, every backward split into B and a
      // W that trails it by the rank's index, over 2 and 3 chunks.
      {"global", "interleaved-zb", "single", false, 2},
      {"global", "interleaved-zb", "single", false, 3},
      // ZBV: 2 chunks on the v map (rank P-1 passes stage P-1's output to its own stage P),
      // M = 2P and M = P + 1 (fewer than its 2P - 1 on 3 or more ranks: passes left out).
      {"global", "zbv", "single", false, 2},
      {"global", "zbv", "single", true, 2},
      // DualPipeV: overlapped pairs (a forward of one chunk with a whole backward of the
      // other) logged as one action, split backwards in the warm-up and the drain; M = 2P.
      {"global", "dualpipev", "single", false, 2}};
  for (const Choice& choice : choices) {
    // Summed losses need auxiliary heads: a strategy global on p stages has none.
    const bool global = placement::strategy_reach(choice.strategy, p) == p - 1;
    if (global && std::string(choice.interlock) == "sum") continue;
    TrainConfig c = testing::small_resnet();
    c.strategy = choice.strategy;
    c.pipeline = choice.pipeline;
    c.interlock_mode = choice.interlock;
    c.virtual_stages = choice.virtual_stages;
    if (choice.virtual_stages > 1) {
      c.micro_batches = choice.more_micro_batches_than_ranks ? p + 1 : 2 * p;
      c.batch_size = 2 * c.micro_batches;
    } else if (choice.more_micro_batches_than_ranks) {
      c.micro_batches = p + 2;
      c.batch_size = 2 * c.micro_batches;
    } else {
      c.micro_batches = 2;
    }
    c.steps = 2;
    const TrainPlan plan = testing::chain_plan(c, p);
    ASSERT_EQ(plan.schedule.messages, placement::MessageLevel::stage);
    ASSERT_EQ(plan.schedule.virtual_stages, choice.virtual_stages);
    ASSERT_EQ(plan.stage_placement.device_count, p * choice.virtual_stages);
    expect_executes_schedule(plan, std::string(choice.strategy) + "/" + choice.pipeline + "/" +
                                       choice.interlock + " P=" + std::to_string(p) +
                                       " V=" + std::to_string(choice.virtual_stages) +
                                       " M=" + std::to_string(c.micro_batches));
  }
}

// A placement that is no chain: the list-scheduled node-level schedule, without message
// actions.
TEST(Runtime, ExecutesTheNodeLevelScheduleOffChains) {
  TrainConfig c = testing::small_gpt();
  c.placer = "round-robin";
  c.micro_batches = 2;
  c.steps = 1;
  c.devices = testing::world_size();
  const TrainPlan plan = plan_config(c);
  ASSERT_EQ(plan.schedule.messages, placement::MessageLevel::node);
  expect_executes_schedule(plan, "gpt round-robin gpipe");
}

}  // namespace
}  // namespace interplace::runs
