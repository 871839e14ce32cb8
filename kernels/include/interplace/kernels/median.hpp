// The one median of the project: the middle value of an odd count, the mean of the two
// middle values of an even count (as numpy.median), NaN for no values. Step-time
// summaries in the runtime, the sweep's progress line, `interplace train` and the result
// reader all use it, so that every tool reports the same number for the same steps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace interplace::kernels {

inline double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

}  // namespace interplace::kernels
