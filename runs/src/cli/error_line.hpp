// The command line's one error line, "interplace: error: MESSAGE" on stderr, and how an
// MPI command reports an error that every rank shares.
#pragma once

#include <string>

namespace interplace::runs::cli {

// Prints the error line (newlines in `message` become spaces) and returns `status`.
int print_error_line(int status, std::string message);

// Thrown once the error line is printed: main returns `exit_code` and prints nothing more.
struct ReportedFailure {
  int exit_code = 1;
};

// For the catch block of an MPI command whose ranks all fail with the same error (train
// and sweep agree on it): rank 0 prints the error line now, while MPI is still
// initialised, and the other ranks stay quiet. Printed after MPI_Finalize it could be
// lost: once another rank has finalised and exited non-zero, mpirun ends the job
// (runs.cli.train_errors lost rank 0's line that way under load). Throws ReportedFailure.
[[noreturn]] void report_shared_failure(int world_rank);

}  // namespace interplace::runs::cli
