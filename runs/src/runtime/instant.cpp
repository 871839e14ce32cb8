#include "runtime/instant.hpp"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "interplace/kernels/error.hpp"
#include "runtime/messenger.hpp"

namespace interplace::runs {

double thread_cpu_s() {
  timespec t{};
  // Linux supports this clock for every thread; a failure would be a broken system, and
  // silently zero CPU times would read as idle ranks.
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) {
    throw_runtime(std::string("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed: ") +
                  std::strerror(errno));
  }
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

Instant now() {
  return {wall_s(), thread_cpu_s()};
}

}  // namespace interplace::runs
