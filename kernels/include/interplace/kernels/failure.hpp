// One classification of failures: what an exception means for the exit status of the
// command line, and for the outcome a sweep records. The CLI's main, the sweep driver and
// train() all ask classify_failure, so that they cannot disagree (e.g. on
// std::bad_alloc).
#pragma once

#include <exception>
#include <new>
#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace {

// A non-finite training loss: the configuration diverged. Not a bug of the program nor
// bad input, so it has its own outcome. `remote` is set on the ranks that learnt of it
// from another rank (they must not announce it again).
class Diverged : public Error {
 public:
  explicit Diverged(const std::string& message, bool remote = false)
      : Error(ErrorKind::runtime, message), remote_(remote) {}
  bool remote() const { return remote_; }

 private:
  bool remote_;
};

enum class FailureOutcome { skipped, failed, diverged };

struct Failure {
  int exit_code = 1;  // 2: bad input; 1: anything else (docs/cli.md, "Exit status")
  FailureOutcome outcome = FailureOutcome::failed;
  std::string message;
};

inline const char* outcome_name(FailureOutcome outcome) {
  switch (outcome) {
    case FailureOutcome::skipped:
      return "skipped";
    case FailureOutcome::diverged:
      return "diverged";
    case FailureOutcome::failed:
      break;
  }
  return "failed";
}

// `planning`: the error arose while deciding whether a configuration can run; invalid
// input there means "cannot run" (skipped), while training it is a failure.
inline Failure classify_failure(const std::exception_ptr& error, bool planning) {
  try {
    std::rethrow_exception(error);
  } catch (const Diverged& e) {
    return {1, FailureOutcome::diverged, e.what()};
  } catch (const Error& e) {
    const bool invalid = e.kind() == ErrorKind::invalid_input;
    return {invalid ? 2 : 1, planning && invalid ? FailureOutcome::skipped : FailureOutcome::failed,
            e.what()};
  } catch (const std::bad_alloc&) {
    return {1, FailureOutcome::failed,
            "out of memory. HINT: a smaller batch size or model, or more ranks"};
  } catch (const std::exception& e) {
    return {1, FailureOutcome::failed, std::string("internal error: ") + e.what()};
  } catch (...) {
    return {1, FailureOutcome::failed, "internal error: an unknown exception"};
  }
}

}  // namespace interplace
