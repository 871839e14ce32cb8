#include "interplace/runs/mpi_session.hpp"

#include <algorithm>
#include <optional>

#include "interplace/kernels/error.hpp"

namespace interplace::runs {
namespace {

std::optional<NodeLocal>& recorded_world_node_local() {
  static std::optional<NodeLocal> recorded;
  return recorded;
}

double unresponsive_limit_s = 0.0;  // note_unresponsive_peer

}  // namespace

void note_unresponsive_peer(double watchdog_s) {
  // Room for a peer that was only paused to come back and agree (at least 30 s).
  unresponsive_limit_s = std::max(30.0, 2.0 * watchdog_s);
}
void clear_unresponsive_peer() {
  unresponsive_limit_s = 0.0;
}
double unresponsive_peer_limit_s() {
  return unresponsive_limit_s;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_ = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  recorded_world_node_local() = node_local(MPI_COMM_WORLD);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // MPI_Finalize waits for every rank: with one stopped or lost it would never return
  // (seen: a SIGSTOP'd rank kept `train` from exiting after its watchdog error).
  if (owns_ && !finalized && unresponsive_limit_s == 0.0) MPI_Finalize();
}

void check_mpi(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw_runtime(what + " failed: " + std::string(text, static_cast<size_t>(length)));
}

NodeLocal node_local(MPI_Comm comm) {
  MPI_Comm shared = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  NodeLocal local;
  MPI_Comm_rank(shared, &local.rank);
  MPI_Comm_size(shared, &local.size);
  MPI_Comm_free(&shared);
  return local;
}

bool world_node_local_recorded() {
  return recorded_world_node_local().has_value();
}

NodeLocal world_node_local() {
  if (!recorded_world_node_local()) {
    throw_runtime("world_node_local: no MpiSession recorded the node-local ranks");
  }
  return *recorded_world_node_local();
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  const size_t end = version.find_first_of(",\n");
  return end == std::string::npos ? version : version.substr(0, end);
}

}  // namespace interplace::runs
