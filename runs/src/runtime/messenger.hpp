// Point-to-point messages of one training run on a private duplicate of the caller's
// communicator (so nothing leaks into the next configuration), with prompt failure
// propagation: a failing rank sends an abort message (reserved tag) to every other rank,
// and every wait polls its request and probes for that tag, so no rank blocks forever.
// Device tensors travel through pinned host staging buffers (Tensor::host_staging):
// copied out before the send, received into one and copied to the device after.
//
// Data parallelism (docs/strategies.md): the communicator may hold R replicas of a
// pipeline of `stages` ranks, world rank = replica * stages + stage. Point-to-point
// messages then stay within the caller's replica: rank() and size() are its stage and the
// stage count, and send/receive name peers by stage. Aborts, barriers and the records
// (world_rank, world_size, comm) span every replica, and replica_peers() is the
// communicator of this stage's R replicas, for the gradients' all-reduce.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/tensor.hpp"
#include "runtime/instant.hpp"

namespace interplace::runs {

// Thrown on a rank that learnt of another rank's failure (not re-broadcast).
class RemoteAbort : public Error {
 public:
  using Error::Error;
};

class Messenger {
 public:
  static constexpr int kAbortTag = 1;
  static constexpr int kStepRecordTag = 2;  // live step records (step_stream.hpp)
  static constexpr int kFirstTiedTag = 3;   // tied weights: 3 .. kFirstDataTag - 1
  static constexpr int kFirstDataTag = 16;

  // Received tensors are put on `device`. `stages`: ranks per pipeline replica (0: the
  // communicator's size, one replica); the size must be a multiple of it.
  explicit Messenger(MPI_Comm comm, kernels::Device device = kernels::Device::cpu, int stages = 0);
  ~Messenger();
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;

  int rank() const { return stage_; }   // the stage: rank within this rank's replica
  int size() const { return stages_; }  // ranks of one replica
  int replica() const { return rank_ / stages_; }
  int replicas() const { return size_ / stages_; }
  int world_rank() const { return rank_; }  // in the whole communicator
  int world_size() const { return size_; }
  MPI_Comm comm() const { return comm_; }  // every replica's ranks
  // The ranks of this stage in every replica, ordered by replica (MPI_COMM_NULL with one
  // replica).
  MPI_Comm replica_peers() const { return peers_; }
  int tag_upper_bound() const { return tag_ub_; }

  // Non-blocking for host tensors (kept alive until the send completes); a device tensor
  // is first copied to a staging buffer, which waits for the work that produces it.
  // Peers (destination, source) are stages of this rank's replica.
  void send(const kernels::Tensor& tensor, int destination, int tag);
  // Blocks (polling for aborts) until the message arrives; its size must match. Takes the
  // receive post_receive posted for (source, tag), if any.
  kernels::Tensor receive(const kernels::Shape& shape, int source, int tag);
  // Posts the receive of a message that a later receive(shape, source, tag) takes, so that
  // it can land while this rank computes (pre-posted receives): a rank that
  // posts only when it needs a message makes a large one wait for the handshake then.
  // At most one posted receive per (source, tag).
  void post_receive(const kernels::Shape& shape, int source, int tag);
  // Lets MPI move messages (posted receives, outstanding sends) without waiting: called
  // between the layers of a unit, so transfers progress during compute.
  void progress();
  // Polls `request` to completion; throws RemoteAbort when another rank failed, and a
  // runtime error naming `what` (the peer, tag, tensor) when it has waited
  // longer than watchdog_s (a peer stopped, hung or lost: without it the other ranks
  // would spin at full CPU forever). After 10 ms of polling it sleeps between
  // polls (at most 0.5 ms), so a long wait does not burn a shared core. On a
  // device, first waits for the device's queued work, so that time blocked here is
  // communication only.
  void wait(MPI_Request& request, MPI_Status* status = nullptr, const std::string& what = "");
  void barrier();
  void complete_sends();  // waits for every outstanding send
  void reap_sends();      // frees the sends that have completed, without waiting

  // Tells every other rank that this one failed, then drops outstanding requests.
  void abort(const Error& error) noexcept;

  // Seconds one wait may last before the watchdog fails the run (<= 0: no limit).
  double watchdog_s = kDefaultWatchdogS;
  static constexpr double kDefaultWatchdogS = 300.0;

  // Called inside every wait, for timing (seconds spent blocked are added by the caller).
  double comm_wait_s = 0.0;
  int64_t bytes_sent = 0;
  int64_t messages_sent = 0;
  // After every wait, with both clocks at its start and end (after the device sync), so
  // that the caller can cut the wait out of its unit of work in wall and CPU time alike.
  std::function<void(const Instant& start, const Instant& end)> on_wait;

 private:
  void check_abort();
  struct PendingSend {
    MPI_Request request = MPI_REQUEST_NULL;
    kernels::Tensor buffer;
  };
  int world_of(int stage) const { return replica() * stages_ + stage; }
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm peers_ = MPI_COMM_NULL;
  kernels::Device device_ = kernels::Device::cpu;
  int rank_ = 0;
  int size_ = 1;
  int stages_ = 1;
  int stage_ = 0;
  int tag_ub_ = 32767;
  std::vector<PendingSend> sends_;
  struct PostedReceive {
    MPI_Request request = MPI_REQUEST_NULL;
    kernels::Tensor buffer;
  };
  std::map<std::pair<int, int>, PostedReceive> posted_;  // by (source, tag)
  std::string abort_text_;                               // kept alive until its sends complete
  std::vector<MPI_Request> abort_sends_;
  bool failed_ = false;  // this rank failed or learnt of a failure: see the destructor
};

double wall_s();  // MPI_Wtime

}  // namespace interplace::runs
