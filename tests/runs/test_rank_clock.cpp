// The runtime's clock (runs/src/runtime/rank_clock.hpp): a unit of work is split around
// the waits for messages inside it, so compute and communication never overlap, in wall
// and in CPU time alike.
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "runtime/rank_clock.hpp"

namespace interplace::runs {
namespace {

// Both clocks at the same reading: tests of the wall-clock bookkeeping.
Instant at(double wall, double cpu = 0.0) {
  return {wall, cpu};
}

TEST(RankClock, WaitsAreCutOutOfTheOpenUnit) {
  RankClock clock;
  clock.record_events = true;
  clock.step_start_s = 10.0;
  clock.begin("forward", at(10.0));
  clock.waited(at(10.5), at(11.5));  // a receive in the middle of the forward unit
  clock.end(at(12.0));
  clock.waited(at(12.0), at(12.25));  // outside any unit: communication only
  clock.begin("optimizer", at(12.25));
  clock.end(at(12.5));
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

// The CPU a wait's polling takes belongs to the wait (its comm_wait event), never to the
// unit it interrupts.
TEST(RankClock, WaitsAreCutOutOfTheUnitsCpuTime) {
  RankClock clock;
  clock.record_events = true;
  clock.begin("backward", at(0.0, 100.0));
  clock.waited(at(0.5, 100.4), at(1.5, 100.9));  // 0.5 CPU seconds spinning in MPI
  clock.end(at(2.0, 101.3));
  EXPECT_DOUBLE_EQ(clock.backward_s, 1.0);
  EXPECT_NEAR(clock.backward_cpu_s, 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(clock.forward_cpu_s, 0.0);
  ASSERT_EQ(clock.events.size(), 3u);
  EXPECT_NEAR(clock.events[0].cpu_s, 0.4, 1e-12);
  EXPECT_NEAR(clock.events[1].cpu_s, 0.5, 1e-12);
  EXPECT_EQ(clock.events[1].kind, "comm_wait");
  EXPECT_NEAR(clock.events[2].cpu_s, 0.4, 1e-12);
}

TEST(RankClock, BackToBackUnitsOfOneKindMergeIntoOneEvent) {
  RankClock clock;
  clock.record_events = true;
  for (double t : {0.0, 1.0, 2.0}) {
    clock.begin("backward", at(t, t / 2));
    clock.end(at(t + 1.0, (t + 1.0) / 2));
  }
  EXPECT_DOUBLE_EQ(clock.backward_s, 3.0);
  EXPECT_DOUBLE_EQ(clock.backward_cpu_s, 1.5);
  ASSERT_EQ(clock.events.size(), 1u);
  EXPECT_DOUBLE_EQ(clock.events[0].end_s, 3.0);
  EXPECT_DOUBLE_EQ(clock.events[0].cpu_s, 1.5);  // the merged parts' CPU times add up
}

TEST(RankClock, WithoutEventsOnlyTotalsAreKept) {
  RankClock clock;
  clock.begin("aux", at(0.0, 1.0));
  clock.end(at(0.5, 1.25));
  EXPECT_DOUBLE_EQ(clock.aux_s, 0.5);
  EXPECT_DOUBLE_EQ(clock.aux_cpu_s, 0.25);
  EXPECT_TRUE(clock.events.empty());
}

TEST(RankClock, UnitsDoNotNest) {
  RankClock clock;
  clock.begin("forward", at(0.0));
  EXPECT_THROW(clock.begin("backward", at(0.1)), Error);
  RankClock idle;
  EXPECT_THROW(idle.end(at(1.0)), Error);
}

// The real clocks (instant.hpp). Their readings are not simultaneous: a unit's CPU time
// may exceed its wall time by the few microseconds between the two reads.
constexpr double kReadSlackS = 1e-4;

void burn_cpu_s(double seconds) {
  const double until = thread_cpu_s() + seconds;
  volatile double x = 1.0;
  while (thread_cpu_s() < until) x = x * 1.0000001 + 1e-9;
}

TEST(RankClock, ComputeCpuTimeIsAtMostItsWallTime) {
  RankClock clock;
  clock.record_events = true;
  const Instant start = now();
  clock.step_start_s = start.wall_s;
  clock.begin("forward", start);
  burn_cpu_s(0.02);
  const Instant end = now();
  clock.end(end);
  const double wall = end.wall_s - start.wall_s;
  EXPECT_GE(clock.forward_cpu_s, 0.02);
  EXPECT_LE(clock.forward_cpu_s, wall + kReadSlackS);
  ASSERT_EQ(clock.events.size(), 1u);
  EXPECT_DOUBLE_EQ(clock.events[0].cpu_s, clock.forward_cpu_s);
}

// A unit that only sleeps (a rank that waits outside the Messenger) accrues wall time but
// next to no CPU time; one that waits in the Messenger has even the wait cut out.
TEST(RankClock, SleepingAccruesNoCpuTime) {
  RankClock clock;
  clock.begin("backward", now());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  clock.end(now());
  EXPECT_GE(clock.backward_s, 0.05);
  EXPECT_LT(clock.backward_cpu_s, 0.005);
}

TEST(RankClock, ThreadCpuTimeIsMonotonicAndFine) {
  timespec resolution{};
  ASSERT_EQ(clock_getres(CLOCK_THREAD_CPUTIME_ID, &resolution), 0);
  EXPECT_EQ(resolution.tv_sec, 0);
  EXPECT_LE(resolution.tv_nsec, 1000);  // microseconds at worst: units last milliseconds
  const double a = thread_cpu_s();
  burn_cpu_s(0.001);
  EXPECT_GT(thread_cpu_s(), a);
}

}  // namespace
}  // namespace interplace::runs
