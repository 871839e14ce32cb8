// Test helper: sets the CPU thread count for one scope and restores it afterwards.
#pragma once

#include "interplace/kernels/backend.hpp"

namespace interplace::kernels::testing {

class ScopedThreads {
 public:
  explicit ScopedThreads(int threads) : previous_(cpu_threads()) { set_cpu_threads(threads); }
  ~ScopedThreads() { set_cpu_threads(previous_); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int previous_;
};

}  // namespace interplace::kernels::testing
