// The project's one median (kernels/median.hpp): odd, even (mean of the middle two, as
// numpy.median) and empty (NaN) counts, in any input order.
#include "interplace/kernels/median.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace interplace::kernels {
namespace {

TEST(Median, OddCountIsTheMiddleValue) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({5.0}), 5.0);
  EXPECT_DOUBLE_EQ(median({9.0, 1.0, 7.0, 3.0, 5.0}), 5.0);
}

TEST(Median, EvenCountIsTheMeanOfTheTwoMiddleValues) {
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(median({1.0, 10.0}), 5.5);
  EXPECT_DOUBLE_EQ(median({1.0, 2.0, 2.0, 100.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({0.98, 1.0, 1.02, 1.04, 0.97, 1.03, 0.99, 1.01}), 1.005);
}

TEST(Median, EmptyIsNaN) {
  EXPECT_TRUE(std::isnan(median({})));
}

}  // namespace
}  // namespace interplace::kernels
