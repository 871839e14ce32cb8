// interplace profile's host-sharing measurement (interplace/runs/profiling.hpp,
// measure_host_sharing): how much ranks on one host slow each other down while they compute
// at once, the term the simulators apply to ranks of one host (docs/simulator.md).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/profiling.hpp"

namespace interplace::runs {
namespace {

// Interleaved rounds of the whole measurement; each factor is the median over them.
constexpr int kHostSharingRounds = 3;

// A barrier entered the way the runtime waits for a message: MPI_Wait, which polls
// (spins) in Open MPI and MPICH, so that waiting ranks load the host as in a real run.
void spinning_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
}

}  // namespace

placement::HostSharing measure_host_sharing(MPI_Comm host, const RuntimeUnitOptions& options,
                                            double solo_s) {
  if (!(solo_s > 0.0) || !std::isfinite(solo_s)) {
    throw_invalid("host sharing: the solo time must be finite and > 0");
  }
  int rank = 0;
  int size = 1;
  check_mpi(MPI_Comm_rank(host, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(host, &size), "MPI_Comm_size");
  // Long enough that the ranks' timed steps overlap: they start the units together but
  // spend a varying time planning and building the model first, which a run of a few
  // milliseconds would not cover (the ranks would barely overlap and the slowdown read
  // as about 1). About a second of steps at the solo speed.
  RuntimeUnitOptions overlapping = options;
  overlapping.steps = runtime_unit_steps(solo_s, options.steps);
  // Rounds, each with its own reference (host rank 0 alone, a mean like the shared runs),
  // and every factor the median over rounds of its ratio to its round's reference: one
  // second of each setting, once, let a slow spell of a VM decide a factor (seen: 1.85 for
  // one rank computing while the other only waited, against about 1 in a quiet round).
  std::map<std::pair<int, int>, std::vector<double>> ratios_by_setting;  // (P, n) -> rounds
  for (int round = 0; round < kHostSharingRounds; ++round) {
    double alone_s = 0.0;
    if (rank == 0) alone_s = time_runtime_units(overlapping).mean_compute_s;
    quiet_barrier(host);
    check_mpi(MPI_Bcast(&alone_s, 1, MPI_DOUBLE, 0, host), "MPI_Bcast");
    if (!(alone_s > 0.0)) throw_runtime("host sharing: the units took no time alone");
    for (int ranks = 2; ranks <= size; ++ranks) {
      for (int busy = 1; busy <= ranks; ++busy) {
        quiet_barrier(host);  // everyone starts together
        double ratio = std::nan("");
        if (rank < busy) {
          const RuntimeUnits units = time_runtime_units(overlapping);
          ratio = units.mean_compute_s / alone_s;
          quiet_barrier(host);
        } else if (rank < ranks) {
          spinning_barrier(host);
        } else {
          quiet_barrier(host);
        }
        std::vector<double> ratios(rank == 0 ? static_cast<size_t>(size) : 0);
        check_mpi(MPI_Gather(&ratio, 1, MPI_DOUBLE, ratios.data(), 1, MPI_DOUBLE, 0, host),
                  "MPI_Gather");
        if (rank == 0) {
          ratios.resize(static_cast<size_t>(busy));
          ratios_by_setting[{ranks, busy}].push_back(kernels::median(ratios));
        }
      }
    }
  }
  placement::HostSharing sharing;
  if (rank != 0) return sharing;
  for (const auto& [setting, rounds] : ratios_by_setting) {
    // No faster than alone: a smaller ratio is timing noise.
    sharing.slowdown[setting.first].push_back(std::max(1.0, kernels::median(rounds)));
  }
  return sharing;
}

}  // namespace interplace::runs
