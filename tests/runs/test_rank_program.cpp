// Per-rank programs (runs/src/runtime/rank_program.hpp): every micro-batch's saved state
// is released exactly once, after its last use, so a rank holds as many micro-batches as
// its schedule keeps in flight: all M under GPipe, at most K - rank under 1F1B.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "mpi_test_support.hpp"
#include "runtime/rank_program.hpp"

namespace interplace::runs {
namespace {

using placement::ActionKind;

// The most micro-batches holding saved state at once while `program` runs, checking that
// each is released once and never used after its release.
int peak_in_flight(const RankProgram& program, int micro_batches, const std::string& what) {
  std::set<int> live, released;
  size_t peak = 0;
  EXPECT_EQ(program.release.size(), program.actions.size()) << what;
  for (size_t i = 0; i < program.actions.size(); ++i) {
    const placement::Action& a = program.actions[i];
    if (a.kind != ActionKind::optimizer_step) {
      EXPECT_FALSE(released.count(a.micro_batch))
          << what << ": micro-batch " << a.micro_batch << " used after release";
      live.insert(a.micro_batch);
      peak = std::max(peak, live.size());
    }
    for (int m : program.release[i]) {
      EXPECT_TRUE(live.count(m)) << what << ": released " << m << " twice or before use";
      live.erase(m);
      released.insert(m);
    }
  }
  EXPECT_TRUE(live.empty()) << what << ": micro-batches never released";
  EXPECT_EQ(released.size(), static_cast<size_t>(micro_batches)) << what;
  return static_cast<int>(peak);
}

TrainPlan plan_of(const std::string& strategy, const std::string& pipeline, int devices, int m) {
  TrainConfig c = testing::small_resnet();
  c.batch_size = 16;
  c.micro_batches = m;
  c.strategy = strategy;
  c.pipeline = pipeline;
  return testing::chain_plan(c, devices);
}

TEST(RankProgram, GpipeHoldsEveryMicroBatchOneFOneBOnlyThoseInFlight) {
  const int k = 4, m = 8;
  for (int rank = 0; rank < k; ++rank) {
    const std::string at = " rank " + std::to_string(rank);
    EXPECT_EQ(peak_in_flight(rank_program(plan_of("global", "gpipe", k, m), rank), m, "gpipe" + at),
              m);
    EXPECT_EQ(peak_in_flight(rank_program(plan_of("global", "1f1b", k, m), rank), m, "1f1b" + at),
              k - rank);
  }
}

// ZB-H1 keeps a micro-batch's contexts until its weight pass W, the last use of it: every
// rank holds at most K, as many as 1F1B's rank 0.
TEST(RankProgram, ZbH1HoldsAMicroBatchUntilItsWeightPass) {
  const int k = 4, m = 8;
  for (int rank = 0; rank < k; ++rank) {
    const std::string at = " rank " + std::to_string(rank);
    const RankProgram program = rank_program(plan_of("global", "zb-h1", k, m), rank);
    EXPECT_EQ(peak_in_flight(program, m, "zb-h1" + at), k);
    for (size_t i = 0; i < program.actions.size(); ++i) {
      for (int released : program.release[i]) {
        EXPECT_EQ(program.actions[i].kind, ActionKind::backward_weight) << at;
        EXPECT_EQ(program.actions[i].micro_batch, released) << at;
      }
    }
  }
}

// Interleaved 1F1B: a chunk's state of a micro-batch goes after that chunk's last action
// for it (its backward's gradient send), as the simulator frees it: rank j holds at most
// min(MV, VK - j) (micro-batch, chunk) units, rank 0 VK; none is used after its release.
TEST(RankProgram, InterleavedReleasesEachChunkAfterItsBackward) {
  const int k = 4, v = 2, m = 8;
  TrainConfig c = testing::small_resnet();
  c.batch_size = 16;
  c.micro_batches = m;
  c.pipeline = "interleaved-1f1b";
  c.virtual_stages = v;
  const TrainPlan plan = testing::chain_plan(c, k);
  for (int rank = 0; rank < k; ++rank) {
    const std::string at = "rank " + std::to_string(rank);
    const RankProgram program = rank_program(plan, rank);
    ASSERT_EQ(program.release_chunk.size(), program.actions.size()) << at;
    std::set<std::pair<int, int>> live, released;
    size_t peak = 0;
    for (size_t i = 0; i < program.actions.size(); ++i) {
      const placement::Action& a = program.actions[i];
      if (a.kind != ActionKind::optimizer_step) {
        const std::pair<int, int> unit{a.micro_batch, a.chunk};
        EXPECT_FALSE(released.count(unit)) << at << ": used after release";
        live.insert(unit);
        peak = std::max(peak, live.size());
      }
      for (const auto& unit : program.release_chunk[i]) {
        EXPECT_EQ(a.micro_batch, unit.first) << at;
        EXPECT_EQ(a.chunk, unit.second) << at;
        EXPECT_TRUE(live.erase(unit)) << at;
        released.insert(unit);
      }
      for (int done : program.release[i]) {
        std::erase_if(live, [&](const std::pair<int, int>& unit) {
          if (unit.first != done) return false;
          released.insert(unit);
          return true;
        });
      }
    }
    EXPECT_TRUE(live.empty()) << at;
    EXPECT_EQ(released.size(), static_cast<size_t>(m * v)) << at;
    EXPECT_EQ(static_cast<int>(peak), std::min(m * v, v * k - rank)) << at;
  }
}

TEST(RankProgram, LocalAndInterlockingStrategiesReleaseEveryMicroBatch) {
  const int k = 4, m = 8;
  for (const char* strategy : {"local", "pairwise", "nwise:3"}) {
    for (int rank = 0; rank < k; ++rank) {
      const std::string what = std::string(strategy) + " rank " + std::to_string(rank);
      const int peak = peak_in_flight(rank_program(plan_of(strategy, "1f1b", k, m), rank), m, what);
      EXPECT_LT(peak, m) << what << ": holds every micro-batch at once";
    }
  }
}

}  // namespace
}  // namespace interplace::runs

namespace interplace::runs {
namespace {

// The program is the plan's schedule itself: the messages included, nothing rebuilt.
TEST(RankProgram, IsThePlansScheduleWithItsMessages) {
  const TrainPlan plan = plan_of("global", "1f1b", 3, 4);
  for (int rank = 0; rank < 3; ++rank) {
    const RankProgram program = rank_program(plan, rank);
    EXPECT_EQ(program.actions, plan.schedule.stage_actions[static_cast<size_t>(rank)]);
    const auto messages = std::count_if(
        program.actions.begin(), program.actions.end(), [](const placement::Action& a) {
          return a.kind == ActionKind::send || a.kind == ActionKind::receive;
        });
    EXPECT_EQ(messages, rank == 1 ? 4 * 4 : 4 * 2) << "rank " << rank;
  }
  EXPECT_THROW(rank_program(plan, 3), Error);
}

}  // namespace
}  // namespace interplace::runs
