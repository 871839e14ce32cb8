#include "runtime/step_stream.hpp"

#include "interplace/runs/mpi_session.hpp"

namespace interplace::runs {

StepStream::StepStream(const TrainPlan& plan, Messenger& msg, StepCallback on_step)
    : plan_(plan), msg_(msg), on_step_(std::move(on_step)) {}

StepStream::~StepStream() {
  // After a failure rows may still be in flight; MPI must not write into freed buffers
  // of a receive, and a send's buffer must outlive it: let go of both (the communicator
  // of a failed run is leaked too, see Messenger).
  for (Pending& p : sends_) {
    if (p.request == MPI_REQUEST_NULL) continue;
    MPI_Request_free(&p.request);
    static std::vector<std::vector<double>> orphaned;
    orphaned.push_back(std::move(p.buffer));
  }
}

void StepStream::post(int step, const std::vector<double>& row) {
  if (!on_step_) return;
  std::vector<double> message{static_cast<double>(step)};
  message.insert(message.end(), row.begin(), row.end());
  if (msg_.world_rank() == 0) {
    take(message, 0);
    receive_arrived();
    hand_on();
    return;
  }
  std::erase_if(sends_, [](Pending& p) {
    int done = 0;
    MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  sends_.push_back({std::move(message), MPI_REQUEST_NULL});
  Pending& p = sends_.back();
  check_mpi(MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_DOUBLE, 0,
                      Messenger::kStepRecordTag, msg_.comm(), &p.request),
            "MPI_Isend (step record)");
}

void StepStream::finish(int steps) {
  if (!on_step_) return;
  if (msg_.world_rank() != 0) {
    for (Pending& p : sends_) msg_.wait(p.request);
    sends_.clear();
    return;
  }
  std::vector<double> message(1 + kStepFields);
  while (next_ < steps) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Status status;
    check_mpi(MPI_Irecv(message.data(), static_cast<int>(message.size()), MPI_DOUBLE,
                        MPI_ANY_SOURCE, Messenger::kStepRecordTag, msg_.comm(), &request),
              "MPI_Irecv (step record)");
    try {
      msg_.wait(request, &status);
    } catch (...) {
      // The receive may still be matched later (a step record of a rank that was only
      // slow): cancel it, and keep its buffer alive in case the cancel came too late.
      static std::vector<std::vector<double>> orphaned;
      MPI_Cancel(&request);
      MPI_Request_free(&request);
      orphaned.push_back(std::move(message));
      throw;
    }
    take(message, status.MPI_SOURCE);
    hand_on();
  }
}

void StepStream::drain() noexcept {
  if (!on_step_ || msg_.world_rank() != 0) return;
  try {
    receive_arrived();
    hand_on();
  } catch (...) {
    // Nothing more can be shown; the failure that brought us here is what matters.
  }
}

void StepStream::take(const std::vector<double>& message, int source) {
  Arrived& a = arrived_[static_cast<int>(message[0])];
  if (a.rows.empty()) a.rows.resize(static_cast<size_t>(msg_.world_size()));
  a.rows[static_cast<size_t>(source)].assign(message.begin() + 1, message.end());
  ++a.count;
}

void StepStream::receive_arrived() {
  std::vector<double> message(1 + kStepFields);
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, Messenger::kStepRecordTag, msg_.comm(), &flag, &status);
    if (!flag) return;
    check_mpi(
        MPI_Recv(message.data(), static_cast<int>(message.size()), MPI_DOUBLE, status.MPI_SOURCE,
                 Messenger::kStepRecordTag, msg_.comm(), MPI_STATUS_IGNORE),
        "MPI_Recv (step record)");
    take(message, status.MPI_SOURCE);
  }
}

void StepStream::hand_on() {
  for (auto it = arrived_.find(next_);
       it != arrived_.end() && it->second.count == msg_.world_size(); it = arrived_.find(next_)) {
    StepRecord record = new_step_record(next_, plan_);
    for (int r = 0; r < msg_.world_size(); ++r) {  // every replica's ranks, stage r mod K
      add_rank_to_step(record, r % msg_.size(), it->second.rows[static_cast<size_t>(r)].data());
    }
    arrived_.erase(it);
    ++next_;
    on_step_(record);
  }
}

}  // namespace interplace::runs
