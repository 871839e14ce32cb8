// The one exception type of the project. `kind` tells the CLI which exit status to use:
// invalid_input (bad names, shapes, arguments: exit 2) or runtime (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace interplace {

enum class ErrorKind { invalid_input, runtime };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw Error(ErrorKind::invalid_input, message);
}
[[noreturn]] inline void throw_runtime(const std::string& message) {
  throw Error(ErrorKind::runtime, message);
}

}  // namespace interplace
