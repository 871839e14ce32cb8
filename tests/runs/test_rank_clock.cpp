// The runtime's clock (runs/src/runtime/rank_clock.hpp): a unit of work is split around
// the waits for messages inside it, so compute and communication never overlap.
#include <gtest/gtest.h>

#include "interplace/kernels/error.hpp"
#include "runtime/rank_clock.hpp"

namespace interplace::runs {
namespace {

TEST(RankClock, WaitsAreCutOutOfTheOpenUnit) {
  RankClock clock;
  clock.record_events = true;
  clock.step_start_s = 10.0;
  clock.begin("forward", 10.0);
  clock.waited(10.5, 11.5);  // a receive in the middle of the forward unit
  clock.end(12.0);
  clock.waited(12.0, 12.25);  // outside any unit: communication only
  clock.begin("optimizer", 12.25);
  clock.end(12.5);
  EXPECT_DOUBLE_EQ(clock.forward_s, 1.0);
  EXPECT_DOUBLE_EQ(clock.optimizer_s, 0.25);
  EXPECT_DOUBLE_EQ(clock.backward_s, 0.0);
  ASSERT_EQ(clock.events.size(), 5u);
  const char* kinds[] = {"forward", "comm_wait", "forward", "comm_wait", "optimizer"};
  double previous_end = 0.0;
  for (size_t i = 0; i < clock.events.size(); ++i) {
    EXPECT_EQ(clock.events[i].kind, kinds[i]) << i;
    EXPECT_GE(clock.events[i].start_s, previous_end) << "events overlap at " << i;
    previous_end = clock.events[i].end_s;
  }
  EXPECT_DOUBLE_EQ(clock.events.back().end_s, 2.5);  // relative to the step's start
}

TEST(RankClock, BackToBackUnitsOfOneKindMergeIntoOneEvent) {
  RankClock clock;
  clock.record_events = true;
  for (double t : {0.0, 1.0, 2.0}) {
    clock.begin("backward", t);
    clock.end(t + 1.0);
  }
  EXPECT_DOUBLE_EQ(clock.backward_s, 3.0);
  ASSERT_EQ(clock.events.size(), 1u);
  EXPECT_DOUBLE_EQ(clock.events[0].end_s, 3.0);
}

TEST(RankClock, WithoutEventsOnlyTotalsAreKept) {
  RankClock clock;
  clock.begin("aux", 0.0);
  clock.end(0.5);
  EXPECT_DOUBLE_EQ(clock.aux_s, 0.5);
  EXPECT_TRUE(clock.events.empty());
}

TEST(RankClock, UnitsDoNotNest) {
  RankClock clock;
  clock.begin("forward", 0.0);
  EXPECT_THROW(clock.begin("backward", 0.1), Error);
  RankClock idle;
  EXPECT_THROW(idle.end(1.0), Error);
}

}  // namespace
}  // namespace interplace::runs
