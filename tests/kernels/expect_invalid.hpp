// Test helper: checks that a call throws interplace::Error of kind invalid_input whose
// message contains the given fragments (so errors stay helpful, not just present).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::kernels::testing {

template <class F>
::testing::AssertionResult throws_invalid(F&& f,
                                          std::initializer_list<std::string_view> fragments) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::invalid_input) {
      return ::testing::AssertionFailure() << "error of kind runtime: " << e.what();
    }
    const std::string message = e.what();
    for (std::string_view fragment : fragments) {
      if (message.find(fragment) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << message << "\" lacks \"" << fragment << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no error thrown";
}

// Shorthand for one fragment, reporting the failure as a non-fatal expectation.
template <class F>
void expect_invalid(F&& f, std::string_view fragment) {
  EXPECT_TRUE(throws_invalid(std::forward<F>(f), {fragment}));
}

}  // namespace interplace::kernels::testing
