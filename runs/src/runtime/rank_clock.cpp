#include "runtime/rank_clock.hpp"

#include <string_view>

#include "interplace/kernels/error.hpp"

namespace interplace::runs {

void RankClock::begin(const char* kind, const Instant& now) {
  if (open_kind_ != nullptr) {
    throw_runtime(std::string("RankClock: unit '") + kind + "' begun inside unit '" + open_kind_ +
                  "'");
  }
  open_kind_ = kind;
  open_start_ = now;
}

void RankClock::end(const Instant& now) {
  if (open_kind_ == nullptr) throw_runtime("RankClock: end without an open unit");
  credit(open_kind_, open_start_, now);
  open_kind_ = nullptr;
}

void RankClock::waited(const Instant& start, const Instant& end) {
  if (open_kind_ != nullptr) {
    credit(open_kind_, open_start_, start);
    open_start_ = end;
  }
  add_event("comm_wait", start, end);
}

void RankClock::credit(const char* kind, const Instant& start, const Instant& end) {
  const std::string_view k = kind;
  const bool forward = k == "forward", backward = k == "backward", aux = k == "aux";
  double& wall = forward ? forward_s : backward ? backward_s : aux ? aux_s : optimizer_s;
  double& cpu = forward    ? forward_cpu_s
                : backward ? backward_cpu_s
                : aux      ? aux_cpu_s
                           : optimizer_cpu_s;
  wall += end.wall_s - start.wall_s;
  cpu += end.cpu_s - start.cpu_s;
  add_event(kind, start, end);
}

void RankClock::add_event(const char* kind, const Instant& start, const Instant& end) {
  if (!record_events) return;
  const double s = start.wall_s - step_start_s, e = end.wall_s - step_start_s;
  const double cpu = end.cpu_s - start.cpu_s;
  placement::TimelineEvent event;
  event.kind = kind;
  event.start_s = s;
  event.end_s = e;
  event.cpu_s = cpu;
  if (action != nullptr) {
    event.action = placement::grid_label(*action, micro_batches);
    event.micro_batch = action->mini_batch * micro_batches + action->micro_batch;
    event.loss_stage = action->loss_stage;
    event.peer = action->peer_stage >= 0 && schedule != nullptr
                     ? schedule->device_of_stage(action->peer_stage)
                     : action->peer_stage;
  }
  // Merge back-to-back intervals of one kind and action (a unit cut by waits, or the
  // nodes of a node-level schedule's forward, would be many).
  if (!events.empty() && events.back().kind == event.kind && events.back().action == event.action &&
      s - events.back().end_s < 1e-6) {
    events.back().end_s = e;
    events.back().cpu_s += cpu;
    return;
  }
  events.push_back(std::move(event));
}

}  // namespace interplace::runs
