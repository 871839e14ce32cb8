#include "runtime/messenger.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/failure.hpp"
#include "interplace/runs/mpi_session.hpp"

namespace interplace::runs {
namespace {

// Buffers MPI may still write or read after a failed run (see ~Messenger): kept for the
// life of the process, a few messages per failed configuration.
std::vector<kernels::Tensor>& orphaned_buffers() {
  static std::vector<kernels::Tensor> buffers;
  return buffers;
}

}  // namespace

double wall_s() {
  return MPI_Wtime();
}

Messenger::Messenger(MPI_Comm comm, kernels::Device device, int stages) : device_(device) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  stages_ = stages > 0 ? stages : size_;
  if (size_ % stages_ != 0) {
    MPI_Comm_free(&comm_);
    throw_invalid("a communicator of " + std::to_string(size_) + " ranks holds no whole " +
                  "replicas of " + std::to_string(stages_) + " stages");
  }
  stage_ = rank_ % stages_;
  if (replicas() > 1) {
    check_mpi(MPI_Comm_split(comm_, stage_, replica(), &peers_), "MPI_Comm_split");
    MPI_Comm_set_errhandler(peers_, MPI_ERRORS_RETURN);
  }
  int* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &found);
  if (found && ub) tag_ub_ = *ub;
}

Messenger::~Messenger() {
  // Receives posted but never taken (a failed run): cancelled; their buffers outlive them.
  for (auto& [key, posted] : posted_) {
    if (posted.request != MPI_REQUEST_NULL) {
      MPI_Cancel(&posted.request);
      MPI_Request_free(&posted.request);
    }
    orphaned_buffers().push_back(std::move(posted.buffer));
  }
  const bool failed = failed_ || std::uncaught_exceptions() > 0 || !sends_.empty();
  // Short abort messages go out eagerly; give them a moment, but do not wait for peers
  // that may have left already.
  const double deadline = wall_s() + 2.0;
  for (MPI_Request& request : abort_sends_) {
    int done = 0;
    while (!done && wall_s() < deadline) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) MPI_Request_free(&request);
  }
  if (!failed) {
    if (peers_ != MPI_COMM_NULL) MPI_Comm_free(&peers_);
    MPI_Comm_free(&comm_);
    return;
  }
  // After a failure, messages to this communicator may still be unmatched (aborts that
  // crossed, activations nobody will receive). Open MPI reuses a freed communicator's
  // context id for the next one created, where such messages would be matched or crash
  // it (seen: a segfault in mca_pml_ob1_add_comm in the next configuration of a sweep).
  // So a failed run leaks its duplicate, and the buffers of its unfinished sends (MPI
  // may still read them): a few messages per failed configuration.
  for (PendingSend& s : sends_) {
    if (s.request != MPI_REQUEST_NULL) MPI_Request_free(&s.request);
    orphaned_buffers().push_back(std::move(s.buffer));
  }
  sends_.clear();
}

void Messenger::send(const kernels::Tensor& tensor, int destination, int tag) {
  PendingSend s;
  if (tensor.device() == kernels::Device::cpu) {
    s.buffer = tensor;
  } else {
    s.buffer = kernels::Tensor::host_staging(tensor.shape());
    s.buffer.copy_from(tensor);
  }
  check_mpi(MPI_Isend(s.buffer.data(), static_cast<int>(s.buffer.numel()), MPI_FLOAT,
                      world_of(destination), tag, comm_, &s.request),
            "MPI_Isend");
  bytes_sent += s.buffer.bytes();
  ++messages_sent;
  sends_.push_back(std::move(s));
}

void Messenger::post_receive(const kernels::Shape& shape, int source, int tag) {
  PostedReceive posted;
  posted.buffer = device_ == kernels::Device::cpu ? kernels::Tensor(shape)
                                                  : kernels::Tensor::host_staging(shape);
  if (posted_.count({source, tag}) != 0) {
    throw_runtime("a receive from rank " + std::to_string(source) + " with tag " +
                  std::to_string(tag) + " is posted twice");
  }
  check_mpi(MPI_Irecv(posted.buffer.data(), static_cast<int>(posted.buffer.numel()), MPI_FLOAT,
                      world_of(source), tag, comm_, &posted.request),
            "MPI_Irecv");
  posted_.emplace(std::pair{source, tag}, std::move(posted));
}

void Messenger::progress() {
  reap_sends();
  for (auto& [key, posted] : posted_) {
    if (posted.request == MPI_REQUEST_NULL) continue;
    int done = 0;
    check_mpi(MPI_Test(&posted.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
  }
}

kernels::Tensor Messenger::receive(const kernels::Shape& shape, int source, int tag) {
  // One path: a receive nobody posted ahead is posted now, then taken like the others.
  auto posted = posted_.find({source, tag});
  if (posted == posted_.end()) {
    post_receive(shape, source, tag);
    posted = posted_.find({source, tag});
  } else if (posted->second.buffer.shape() != shape) {
    throw_runtime("a receive of " + kernels::to_string(shape) + " from rank " +
                  std::to_string(source) + " (tag " + std::to_string(tag) + ") was posted as " +
                  kernels::to_string(posted->second.buffer.shape()));
  }
  // On an error the entry stays posted: the destructor cancels it and keeps its buffer
  // alive (a message already arriving cannot be cancelled, and MPI would write into a
  // freed buffer).
  wait(posted->second.request, nullptr,
       "a tensor " + kernels::to_string(shape) + " from rank " + std::to_string(source) + " (tag " +
           std::to_string(tag) + ")");
  kernels::Tensor tensor = std::move(posted->second.buffer);
  posted_.erase(posted);
  return device_ == kernels::Device::cpu ? tensor : tensor.to(device_);
}

void Messenger::check_abort() {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comm_, &flag, &status);
  if (!flag) return;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<size_t>(std::max(count, 1)), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kAbortTag, comm_, MPI_STATUS_IGNORE);
  failed_ = true;
  if (text[0] == 'd') throw Diverged(text.substr(1), true);
  const ErrorKind kind = text[0] == 'i' ? ErrorKind::invalid_input : ErrorKind::runtime;
  throw RemoteAbort(kind, text.substr(1));
}

void Messenger::wait(MPI_Request& request, MPI_Status* status, const std::string& what) {
  if (device_ != kernels::Device::cpu) kernels::backend_for(device_).synchronize();
  const Instant start = now();
  int done = 0;
  auto pause = std::chrono::microseconds(1);
  for (long spins = 0;; ++spins) {
    check_mpi(MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE), "MPI_Test");
    if (done) break;
    check_abort();
    if (spins < 64) continue;
    // Ranks may share cores (oversubscribed tests): let the peer we wait for run. Past
    // 10 ms of waiting (a peer far behind, or stopped), sleep with a growing pause of at
    // most 0.5 ms instead of spinning a core that other jobs on the node could use; short
    // waits, which the step times measure, keep their latency.
    const double waited = wall_s() - start.wall_s;
    if (waited < 0.01) {
      sched_yield();
      continue;
    }
    if (watchdog_s > 0.0 && waited > watchdog_s) {
      failed_ = true;
      note_unresponsive_peer(watchdog_s);
      throw_runtime("waited more than " + std::to_string(static_cast<int>(watchdog_s)) + " s for " +
                    (what.empty() ? std::string("a message from another rank") : what) +
                    " (watchdog_s; a rank stopped or hung?). HINT: raise --watchdog-s "
                    "(sweep spec: watchdog_s) if steps are legitimately this slow");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(500));
  }
  const Instant end = now();
  comm_wait_s += end.wall_s - start.wall_s;
  if (on_wait) on_wait(start, end);
}

void Messenger::barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
  try {
    wait(request, nullptr, "the other ranks to reach a barrier");
  } catch (...) {
    // A non-blocking collective cannot be cancelled; the duplicate communicator dies with it.
    MPI_Request_free(&request);
    throw;
  }
}

void Messenger::reap_sends() {
  std::erase_if(sends_, [](PendingSend& s) {
    int done = 0;
    MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

void Messenger::complete_sends() {
  for (PendingSend& s : sends_) wait(s.request, nullptr, "a send to another rank to complete");
  sends_.clear();
}

void Messenger::abort(const Error& error) noexcept {
  failed_ = true;
  // First character: the kind (i: invalid input, r: runtime, d: diverged, failure.hpp).
  const char* kind = dynamic_cast<const Diverged*>(&error) != nullptr ? "d"
                     : error.kind() == ErrorKind::invalid_input       ? "i"
                                                                      : "r";
  abort_text_ = std::string(kind) + error.what();
  const std::string& text = abort_text_;
  std::vector<MPI_Request>& requests = abort_sends_;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, peer, kAbortTag, comm_,
                  &request) == MPI_SUCCESS) {
      requests.push_back(request);
    }
  }
}

}  // namespace interplace::runs
