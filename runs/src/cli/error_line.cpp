#include "error_line.hpp"

#include <exception>
#include <iostream>

#include "interplace/kernels/failure.hpp"

namespace interplace::runs::cli {

int print_error_line(int status, std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  // One write, so that under mpirun the launcher's own notices cannot split the line.
  const std::string line = "interplace: error: " + message + "\n";
  std::cerr << line << std::flush;
  return status;
}

void report_shared_failure(int world_rank) {
  const Failure failure = classify_failure(std::current_exception(), false);
  if (world_rank == 0) print_error_line(failure.exit_code, failure.message);
  throw ReportedFailure{failure.exit_code};
}

}  // namespace interplace::runs::cli
