// MPI for the commands that need it (train, profile, sweep): initialised on first use, so
// that the placement subcommands start without MPI, and finalised once at exit.
#pragma once

#include <mpi.h>

#include <string>

namespace interplace::runs {

class MpiSession {
 public:
  // MPI_Init_thread(MPI_THREAD_FUNNELED) unless MPI is already initialised; errors are
  // returned (MPI_ERRORS_RETURN on MPI_COMM_WORLD) so they become exceptions, not aborts.
  MpiSession(int* argc, char*** argv);
  ~MpiSession();  // MPI_Finalize if this object initialised MPI
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }

 private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// Set by a rank whose watchdog fired (Messenger::wait): a peer may never answer again
// (stopped, hung, lost). MpiSession then skips MPI_Finalize, which waits for every rank
// (the launcher ends the job instead), and the sweep's agreement waits at most
// unresponsive_peer_limit_s() more. Cleared when the ranks agree again (the peer came back).
void note_unresponsive_peer(double watchdog_s);
void clear_unresponsive_peer();
double unresponsive_peer_limit_s();  // 0: no peer is known to be unresponsive

// Throws runtime with MPI's error string and `what` when `code` is not MPI_SUCCESS.
void check_mpi(int code, const std::string& what);

// Ranks of `comm` on this node and this rank's index among them (MPI_Comm_split_type).
struct NodeLocal {
  int rank = 0;
  int size = 1;
};
NodeLocal node_local(MPI_Comm comm);
// This rank's place on its node in MPI_COMM_WORLD, which picks its GPU: recorded by
// MpiSession at start-up (when every rank takes part), so that a configuration running
// on a sub-communicator needs no collective over the world.
NodeLocal world_node_local();
// Whether an MpiSession recorded it (false in a process that never started MPI).
bool world_node_local_recorded();

// Library versions for result files: MPI_Get_library_version's first line.
std::string mpi_library_version();

}  // namespace interplace::runs
