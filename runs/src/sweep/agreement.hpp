// How the ranks of a sweep agree on what happened to a configuration, and how the ranks
// that do not train wait without spinning a core (Open MPI's blocking collectives poll).
#pragma once

#include <mpi.h>

#include <string>

namespace interplace::runs::sweep {

enum class OutcomeCode { ok = 0, skipped = 1, failed = 2, diverged = 3 };

// The status a result file records for an outcome (docs/results-format.md).
inline const char* status_name(OutcomeCode code) {
  switch (code) {
    case OutcomeCode::skipped:
      return "skipped";
    case OutcomeCode::failed:
      return "failed";
    case OutcomeCode::diverged:
      return "diverged";
    case OutcomeCode::ok:
      break;
  }
  return "ok";
}

struct Outcome {
  OutcomeCode code = OutcomeCode::ok;
  std::string message;
};

// Collective over `comm`: the outcome of the lowest rank that reports a problem (or ok
// when none does), the same on every rank.
Outcome agree(MPI_Comm comm, const Outcome& mine);

// Collective over `comm`: the largest `mine` of all ranks (MPI_MAX, waiting politely).
int agree_max(MPI_Comm comm, int mine);

}  // namespace interplace::runs::sweep
