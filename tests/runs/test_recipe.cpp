// The learning-rate schedules against rates computed by hand, the number lists of the
// recipe's options, and epochs as steps (recipe.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/recipe.hpp"

namespace interplace::runs {
namespace {

std::vector<double> rates(const LrSchedule& s, double base, int total, int64_t per_epoch) {
  std::vector<double> out;
  for (int step = 0; step < total; ++step) {
    out.push_back(learning_rate_at(s, base, step, total, per_epoch));
  }
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "step " << i;
}

TEST(LrSchedule, ConstantIsTheBaseRate) {
  expect_near_all(rates({}, 0.05, 4, 0), {0.05, 0.05, 0.05, 0.05});
}

TEST(LrSchedule, StepDecayAtStepMilestones) {
  LrSchedule s;
  s.kind = LrScheduleKind::step;
  s.milestones = {2, 4};
  s.decay = 0.1;
  // Steps 0-1 at 0.1, 2-3 at 0.01, from 4 on at 0.001 (MultiStepLR stepped per step).
  expect_near_all(rates(s, 0.1, 6, 0), {0.1, 0.1, 0.01, 0.01, 0.001, 0.001});
}

TEST(LrSchedule, StepDecayAtEpochMilestones) {
  LrSchedule s;
  s.kind = LrScheduleKind::step;
  s.milestones = {1, 2.5};  // 3 steps per epoch: from step 3, and from ceil(7.5) = 8
  s.unit = MilestoneUnit::epochs;
  s.decay = 0.5;
  expect_near_all(rates(s, 1.0, 10, 3), {1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25});
}

TEST(LrSchedule, TheStudysScheduleAtItsEpochs) {
  // lr 0.1, x0.1 at epochs 91, 136 and 182 of 200; 390 steps per epoch (50000 / 128).
  LrSchedule s;
  s.kind = LrScheduleKind::step;
  s.milestones = {91, 136, 182};
  s.unit = MilestoneUnit::epochs;
  const int total = 200 * 390;
  EXPECT_NEAR(learning_rate_at(s, 0.1, 91 * 390 - 1, total, 390), 0.1, 1e-15);
  EXPECT_NEAR(learning_rate_at(s, 0.1, 91 * 390, total, 390), 0.01, 1e-15);
  EXPECT_NEAR(learning_rate_at(s, 0.1, 136 * 390, total, 390), 0.001, 1e-15);
  EXPECT_NEAR(learning_rate_at(s, 0.1, 182 * 390 - 1, total, 390), 0.001, 1e-15);
  EXPECT_NEAR(learning_rate_at(s, 0.1, 182 * 390, total, 390), 0.0001, 1e-15);
}

TEST(LrSchedule, CosineFromTheBaseToZero) {
  LrSchedule s;
  s.kind = LrScheduleKind::cosine;
  // 0.5 * (1 + cos(pi * s / 4)) for s = 0..3: 1, (2+sqrt 2)/4, 1/2, (2-sqrt 2)/4.
  const double r = std::sqrt(2.0);
  expect_near_all(rates(s, 0.2, 4, 0), {0.2, 0.2 * (2 + r) / 4, 0.1, 0.2 * (2 - r) / 4});
}

TEST(LrSchedule, LinearWarmUpThenTheSchedule) {
  LrSchedule s;
  s.warmup_steps = 4;
  expect_near_all(rates(s, 0.4, 6, 0), {0.1, 0.2, 0.3, 0.4, 0.4, 0.4});
  // With cosine the half cosine spans the steps after the warm-up (2 here: 1, then 1/2).
  s.kind = LrScheduleKind::cosine;
  expect_near_all(rates(s, 0.4, 6, 0), {0.1, 0.2, 0.3, 0.4, 0.4, 0.2});
  // With steps: warm-up and decay multiply.
  s.kind = LrScheduleKind::step;
  s.milestones = {2};
  s.decay = 0.5;
  expect_near_all(rates(s, 0.4, 6, 0), {0.1, 0.2, 0.15, 0.2, 0.2, 0.2});
}

TEST(LrSchedule, NamesAndChecks) {
  EXPECT_EQ(lr_schedule_by_name("cosine"), LrScheduleKind::cosine);
  EXPECT_EQ(to_string(LrScheduleKind::step), "step");
  EXPECT_EQ(milestone_unit_by_name("epochs"), MilestoneUnit::epochs);
  EXPECT_THROW(lr_schedule_by_name("exponential"), Error);
  EXPECT_THROW(milestone_unit_by_name("hours"), Error);
  LrSchedule s;
  EXPECT_NO_THROW(check_lr_schedule(s));
  EXPECT_TRUE(s.is_default());
  s.milestones = {3};  // milestones without the step schedule
  EXPECT_THROW(check_lr_schedule(s), Error);
  s.kind = LrScheduleKind::step;
  EXPECT_NO_THROW(check_lr_schedule(s));
  s.decay = 0.0;
  EXPECT_THROW(check_lr_schedule(s), Error);
  s.decay = 0.1;
  s.milestones.clear();  // the step schedule without milestones
  EXPECT_THROW(check_lr_schedule(s), Error);
}

TEST(NumberList, ParsesAndPrints) {
  EXPECT_EQ(parse_number_list("k", "91, 136,182"), (std::vector<double>{91, 136, 182}));
  EXPECT_EQ(parse_number_list("k", " "), std::vector<double>{});
  EXPECT_EQ(parse_number_list("k", "0.5"), std::vector<double>{0.5});
  EXPECT_EQ(number_list_text({91, 136, 182}), "91,136,182");
  EXPECT_EQ(number_list_text({0.5, 1.25}), "0.5,1.25");
  for (const char* bad : {"1,,2", "a", "2,1", "1,1", "-1", "0", "1e999", "1;2"}) {
    EXPECT_THROW(parse_number_list("k", bad), Error) << bad;
  }
}

TEST(Epochs, AsSteps) {
  EXPECT_EQ(steps_per_epoch(60000, 128), 468);  // the last partial batch is dropped
  EXPECT_EQ(steps_per_epoch(60000, 64), 937);
  EXPECT_EQ(steps_for_epochs(10, 468), 4680);
  EXPECT_EQ(steps_for_epochs(0.5, 937), 469);  // ceil(468.5)
  EXPECT_EQ(steps_for_epochs(0.1, 30), 3);     // not 4 by rounding error
  EXPECT_EQ(last_step_of_epoch(1, 468), 467);
  EXPECT_THROW(steps_per_epoch(100, 128), Error);
}

}  // namespace
}  // namespace interplace::runs
