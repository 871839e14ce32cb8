#include "agreement.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/mpi_session.hpp"

namespace interplace::runs::sweep {
namespace {

void wait_politely(MPI_Request& request, const char* what) {
  auto pause = std::chrono::microseconds(50);
  const double start = MPI_Wtime();
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    // After this rank's watchdog fired, a peer may never join: give up rather than wait
    // forever (the result file keeps every configuration finished so far: --resume).
    const double limit = unresponsive_peer_limit_s();
    if (limit > 0.0 && MPI_Wtime() - start > limit) {
      throw_runtime(std::string(what) + ": the ranks did not agree within " +
                    std::to_string(static_cast<int>(limit)) +
                    " s of a watchdog failure (a rank stopped or lost); the sweep stops. "
                    "HINT: rerun with --resume once every rank is healthy");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

}  // namespace

int agree_max(MPI_Comm comm, int mine) {
  int all = mine;
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MAX, comm, &request), "MPI_Iallreduce");
  wait_politely(request, "MPI_Iallreduce");
  return all;
}

Outcome agree(MPI_Comm comm, const Outcome& mine) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int key = mine.code == OutcomeCode::ok ? size : rank;
  int first = size;
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(&key, &first, 1, MPI_INT, MPI_MIN, comm, &request), "MPI_Iallreduce");
  wait_politely(request, "MPI_Iallreduce");
  clear_unresponsive_peer();  // every rank answered: none is lost
  if (first == size) return {};
  int header[2] = {static_cast<int>(mine.code), static_cast<int>(mine.message.size())};
  check_mpi(MPI_Bcast(header, 2, MPI_INT, first, comm), "MPI_Bcast");
  Outcome out{static_cast<OutcomeCode>(header[0]),
              rank == first ? mine.message : std::string(static_cast<size_t>(header[1]), '\0')};
  check_mpi(MPI_Bcast(out.message.data(), header[1], MPI_CHAR, first, comm), "MPI_Bcast");
  return out;
}

}  // namespace interplace::runs::sweep
