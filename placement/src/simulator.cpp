#include "interplace/placement/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "interplace/kernels/error.hpp"
#include "shared_compute_clock.hpp"

namespace interplace::placement {
namespace {

// from, to (model stages: under interleaved 1F1B a device's chunks are distinct stages),
// payload, loss stage, mini-batch, micro-batch, node (node-level schedules: the tensor)
using MessageKey = std::tuple<int, int, int, int, int, int, int>;

MessageKey key_of(int from, int to, const Action& action) {
  return {from,
          to,
          static_cast<int>(action.payload),
          action.loss_stage,
          action.mini_batch,
          action.micro_batch,
          action.node};
}

void validate_entry(const StageCosts& s, const std::string& what) {
  for (double value : {s.forward_s, s.backward_s, s.backward_input_s, s.aux_forward_s,
                       s.aux_backward_s, s.optimizer_s}) {
    if (!(value >= 0.0) || !std::isfinite(value)) {
      throw_invalid("simulator: " + what + " has a negative or non-finite time");
    }
  }
  if (s.output_bytes < 0 || s.parameter_state_bytes < 0 || s.activation_bytes < 0 ||
      s.aux_activation_bytes < 0 || s.gradient_bytes < 0) {
    throw_invalid("simulator: " + what + " has negative bytes");
  }
}

void validate(const Schedule& schedule, const PipelineCosts& costs) {
  if (static_cast<int>(costs.stages.size()) != schedule.stage_count * schedule.virtual_stages) {
    throw_invalid("simulator: " + std::to_string(costs.stages.size()) + " stage costs for a " +
                  std::to_string(schedule.stage_count * schedule.virtual_stages) +
                  "-stage schedule");
  }
  for (size_t i = 0; i < costs.stages.size(); ++i) {
    validate_entry(costs.stages[i], "stage " + std::to_string(i));
  }
  for (size_t i = 0; i < costs.nodes.size(); ++i) {
    validate_entry(costs.nodes[i], "node " + std::to_string(i));
  }
  const bool node_level = schedule.messages == MessageLevel::node;
  for (const std::vector<Action>& actions : schedule.stage_actions) {
    for (const Action& a : actions) {
      if (a.node >= static_cast<int>(costs.nodes.size()) ||
          (node_level ? a.node < 0 && a.kind != ActionKind::optimizer_step : a.node >= 0)) {
        throw_invalid("simulator: action '" + to_string(a) + "' of a " +
                      to_string(schedule.messages) + "-level schedule with costs for " +
                      std::to_string(costs.nodes.size()) + " nodes");
      }
    }
  }
  if (!(costs.mini_batch_overhead_s >= 0.0) || !std::isfinite(costs.mini_batch_overhead_s)) {
    throw_invalid("simulator: the mini-batch overhead must be a finite time >= 0");
  }
  if (costs.data_parallel < 1) {
    throw_invalid("simulator: data parallelism needs >= 1 replica, got " +
                  std::to_string(costs.data_parallel));
  }
  if (!(costs.link.latency_s >= 0.0) || !(costs.link.bandwidth_bytes_per_s > 0.0)) {
    throw_invalid("simulator: link latency must be >= 0 and bandwidth > 0");
  }
}

double duration_s(const Action& action, const StageCosts& costs) {
  switch (action.kind) {
    case ActionKind::forward:
      return costs.forward_s;
    case ActionKind::backward:
      return action.updates_parameters && !action.defers_parameters ? costs.backward_s
                                                                    : costs.backward_input_s;
    case ActionKind::backward_weight:  // the rest of a whole backward
      return std::max(0.0, costs.backward_s - costs.backward_input_s);
    case ActionKind::aux_forward:
      return costs.aux_forward_s;
    case ActionKind::aux_backward:
      return costs.aux_backward_s;
    case ActionKind::optimizer_step:
      return costs.optimizer_s;
    case ActionKind::send:
    case ActionKind::receive:
    case ActionKind::forward_backward:  // its halves', each at its stage's costs
      return 0.0;
  }
  return 0.0;
}

// (mini-batch, micro-batch, chunk): what a device keeps activations for.
using Unit = std::tuple<int, int, int>;

// Index of the last backward pass (or ZB-H1 weight pass) of every (mini-batch,
// micro-batch, chunk) on a device: where its kept activations are freed.
std::map<Unit, size_t> last_backward_index(const std::vector<Action>& actions) {
  std::map<Unit, size_t> last;
  for (size_t i = 0; i < actions.size(); ++i) {
    for (const Action& a : compute_halves(actions[i])) {
      if (a.kind == ActionKind::backward || a.kind == ActionKind::backward_weight) {
        last[{a.mini_batch, a.micro_batch, a.chunk}] = i;
      }
    }
  }
  return last;
}

struct StageState {
  size_t next = 0;
  // When the stage reached its current action; for a receive whose message arrives later,
  // that arrival (the stage resumes then).
  double clock_s = 0.0;
  double waiting_since_s = -1.0;  // start of the current receive's wait; -1: none
  bool computing = false;
  bool drawing_batch = false;   // computing the mini-batch overhead, not an action
  bool receiving = false;       // computing the receiver's share of a receive action
  int drawn_mini_batch = -1;    // the last mini-batch whose overhead was charged
  int reduced_mini_batch = -1;  // the last mini-batch whose gradients were all-reduced
  double compute_start_s = 0.0;
  double forward_share = 1.0;  // an overlapped pair's forward half: its share of the time
  int64_t live_bytes = 0;
  bool started = false;
  std::map<Unit, size_t> frees_at;
};

}  // namespace

double ring_allreduce_s(const LinkSpec& link, int64_t bytes, int replicas, int device,
                        int stage_count) {
  if (replicas <= 1 || bytes <= 0) return 0.0;
  const int64_t share = (bytes + replicas - 1) / replicas;
  double slowest_s = 0.0;  // the ring moves in lockstep: its slowest hop sets the pace
  for (int r = 0; r < replicas; ++r) {
    const int from = r * stage_count + device;
    const int to = ((r + 1) % replicas) * stage_count + device;
    slowest_s = std::max(slowest_s, link.transfer_s(share, from, to));
    if (!link.multi_node()) break;  // one link for every hop
  }
  return 2.0 * (replicas - 1) * slowest_s;
}

SimulationResult simulate(const Schedule& schedule, const PipelineCosts& costs) {
  validate(schedule, costs);
  const int k = schedule.stage_count;  // devices
  // The model stage of device j's action: its chunk's (interleaved 1F1B), else j.
  const auto stage_of = [&](int j, const Action& action) {
    return schedule.stage_of(j, action.chunk);
  };
  const auto device_of = [&](int stage) { return schedule.device_of_stage(stage); };
  SimulationResult result;
  result.stages.resize(k);
  std::vector<StageState> state(k);
  std::vector<int64_t> parameter_state(k, 0);  // of all of a device's chunks
  for (size_t stage = 0; stage < costs.stages.size(); ++stage) {
    parameter_state[device_of(static_cast<int>(stage))] +=
        costs.stages[stage].parameter_state_bytes;
  }
  // Data parallelism: each device's all-reduce of its stages' gradients.
  std::vector<double> allreduce_s(k, 0.0);
  if (costs.data_parallel > 1) {
    std::vector<int64_t> gradient_bytes(k, 0);
    for (size_t stage = 0; stage < costs.stages.size(); ++stage) {
      gradient_bytes[device_of(static_cast<int>(stage))] += costs.stages[stage].gradient_bytes;
    }
    for (int j = 0; j < k; ++j) {
      allreduce_s[j] = ring_allreduce_s(costs.link, gradient_bytes[j], costs.data_parallel, j, k);
    }
  }
  for (int j = 0; j < k; ++j) {
    state[j].frees_at = last_backward_index(schedule.stage_actions[j]);
    result.stages[j].peak_memory_bytes = parameter_state[j];
  }
  detail::SharedComputeClock compute(k, costs.sharing);
  // A message's bytes, `from` stage to stage `to`: an activation is the sender's boundary
  // output, a gradient as big as the activation it is for (the receiver's output).
  // A node-level message is one tensor (or its gradient): its node's output.
  const auto message_bytes = [&](const Action& action, int from, int to) {
    if (action.node >= 0) return costs.nodes[static_cast<size_t>(action.node)].output_bytes;
    return action.payload == Payload::activation ? costs.stages[from].output_bytes
                                                 : costs.stages[to].output_bytes;
  };
  // What a compute action costs: its node's entry (node level) or its stage's.
  const auto costs_of = [&](int j, const Action& action) -> const StageCosts& {
    return action.node >= 0 ? costs.nodes[static_cast<size_t>(action.node)]
                            : costs.stages[stage_of(j, action)];
  };
  std::map<MessageKey, double> in_flight;             // message -> arrival time
  std::map<std::pair<int, int>, double> link_free_s;  // by (device, device)

  // A compute action ends: its stage's bookkeeping, in the stage's program order.
  const auto finish_compute = [&](int j, double now_s) {
    StageState& s = state[j];
    StageTimeline& timeline = result.stages[j];
    compute.finish(j, now_s);
    s.computing = false;
    s.clock_s = now_s;
    if (s.drawing_batch) {  // not an action: nothing to account but the time
      s.drawing_batch = false;
      return;
    }
    timeline.busy_s += now_s - s.compute_start_s;
    if (s.receiving) {  // the receive action ends with the receiver's own time
      s.receiving = false;
      ++s.next;
      return;
    }
    const Action& action = schedule.stage_actions[j][s.next];
    timeline.last_end_s = now_s;
    for (const Action& half : compute_halves(action)) {  // an overlapped pair's in order
      const StageCosts& c = costs_of(j, half);
      if (half.kind == ActionKind::forward) s.live_bytes += c.activation_bytes;
      if (half.kind == ActionKind::aux_forward) s.live_bytes += c.aux_activation_bytes;
      timeline.peak_memory_bytes =
          std::max(timeline.peak_memory_bytes, parameter_state[j] + s.live_bytes);
      if (half.kind == ActionKind::aux_backward) s.live_bytes -= c.aux_activation_bytes;
      if (half.node >= 0) {  // node level: a node's activation lives until its backward
        if (half.kind == ActionKind::backward) s.live_bytes -= c.activation_bytes;
      } else if (half.kind == ActionKind::backward || half.kind == ActionKind::backward_weight) {
        const auto frees = s.frees_at.find({half.mini_batch, half.micro_batch, half.chunk});
        if (frees != s.frees_at.end() && frees->second == s.next)
          s.live_bytes -= c.activation_bytes;
      }
    }
    if (action.kind == ActionKind::optimizer_step) timeline.step_end_s.push_back(now_s);
    const double split_s = action.kind == ActionKind::forward_backward
                               ? s.compute_start_s + s.forward_share * (now_s - s.compute_start_s)
                               : -1.0;
    result.trace.push_back({j, static_cast<int>(s.next), s.compute_start_s, now_s, split_s});
    ++s.next;
  };

  // Runs stage j's actions that take no time at now_s and starts its next compute action.
  // Returns whether anything happened.
  const auto advance = [&](int j, double now_s) {
    StageState& s = state[j];
    const std::vector<Action>& actions = schedule.stage_actions[j];
    bool moved = false;
    while (!s.computing && s.clock_s <= now_s && s.next < actions.size()) {
      const Action& action = actions[s.next];
      const int stage = stage_of(j, action);
      if (action.mini_batch > s.drawn_mini_batch) {
        s.drawn_mini_batch = action.mini_batch;
        if (costs.mini_batch_overhead_s > 0.0) {  // the runtime draws the batch first
          s.computing = true;
          s.drawing_batch = true;
          compute.start(j, s.clock_s, costs.mini_batch_overhead_s);
          return true;
        }
      }
      if (action.kind == ActionKind::receive) {
        if (s.waiting_since_s < 0.0) s.waiting_since_s = s.clock_s;
        const auto it = in_flight.find(key_of(action.peer_stage, stage, action));
        if (it == in_flight.end()) break;  // blocked until the peer sends
        if (it->second > now_s) {          // resume when it arrives
          s.clock_s = it->second;
          break;
        }
        s.clock_s = std::max(s.clock_s, it->second);
        in_flight.erase(it);
        result.trace.push_back({j, static_cast<int>(s.next), s.waiting_since_s, s.clock_s});
        s.waiting_since_s = -1.0;
        // The receiver's own share of the message (LinkSpec::receive_cpu_s), as compute.
        const double own_s = costs.link.receive_cpu_s(
            message_bytes(action, action.peer_stage, stage), device_of(action.peer_stage), j);
        if (own_s > 0.0) {
          s.computing = true;
          s.receiving = true;
          s.compute_start_s = s.clock_s;
          compute.start(j, s.clock_s, own_s);
          return true;
        }
      } else if (action.kind == ActionKind::send) {
        const int to = action.peer_stage;
        const int to_device = device_of(to);
        const int64_t bytes = message_bytes(action, stage, to);
        double& link = link_free_s[{j, to_device}];
        const double start_s = std::max(s.clock_s, link);
        link = start_s + costs.link.transfer_s(bytes, j, to_device);
        // The receiver can take it once the part that is not its own share is over.
        const double arrival_s =
            std::max(start_s, link - costs.link.receive_cpu_s(bytes, j, to_device));
        if (!in_flight.emplace(key_of(stage, to, action), arrival_s).second) {
          throw_runtime("schedule sends '" + to_string(action) + "' twice from stage " +
                        std::to_string(j));
        }
        result.trace.push_back({j, static_cast<int>(s.next), s.clock_s, s.clock_s});
      } else {
        if (action.kind == ActionKind::optimizer_step && allreduce_s[j] > 0.0 &&
            s.reduced_mini_batch < action.mini_batch) {
          // The device's backward work of this mini-batch is done: its gradients' all-reduce
          // starts now, and the step waits for it (idle, not compute).
          s.reduced_mini_batch = action.mini_batch;
          s.clock_s += allreduce_s[j];
          result.stages[j].allreduce_s += allreduce_s[j];
          moved = true;
          if (s.clock_s > now_s) break;
          continue;
        }
        if (!s.started) result.stages[j].first_start_s = s.clock_s;
        s.started = true;
        s.computing = true;
        s.compute_start_s = s.clock_s;
        double work_s = 0.0;
        for (const Action& half : compute_halves(action)) {
          work_s += duration_s(half, costs_of(j, half));
        }
        s.forward_share =
            action.kind == ActionKind::forward_backward && work_s > 0.0
                ? duration_s(forward_half(action), costs_of(j, forward_half(action))) / work_s
                : 1.0;
        compute.start(j, s.clock_s, work_s);
        return true;
      }
      ++s.next;
      moved = true;
    }
    return moved;
  };

  // Global time order: compute actions that run at once on one host share it.
  double now_s = 0.0;
  for (;;) {
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < k; ++j) moved = advance(j, now_s) || moved;
    }
    const auto [ending, end_s] = compute.next_end();
    double next_s = end_s;
    for (const StageState& s : state) {
      if (!s.computing && s.clock_s > now_s) next_s = std::min(next_s, s.clock_s);
    }
    if (!std::isfinite(next_s)) break;  // done, or every stage blocked
    now_s = next_s;
    if (ending >= 0 && end_s <= now_s) finish_compute(ending, now_s);
  }
  std::string stuck;
  for (int j = 0; j < k; ++j) {
    if (state[j].next < schedule.stage_actions[j].size()) {
      stuck += (stuck.empty() ? "" : "; ") + std::string("stage ") + std::to_string(j) +
               " waits forever at action " + std::to_string(state[j].next) + " '" +
               to_string(schedule.stage_actions[j][state[j].next]) + "'";
    }
  }
  if (!stuck.empty()) throw_runtime("schedule deadlocks: " + stuck);
  if (!in_flight.empty()) {
    const auto& [key, arrival] = *in_flight.begin();
    (void)arrival;
    throw_runtime("schedule leaves " + std::to_string(in_flight.size()) +
                  " message(s) unreceived, the first from stage " +
                  std::to_string(std::get<0>(key)) + " to stage " +
                  std::to_string(std::get<1>(key)));
  }
  for (int j = 0; j < k; ++j) result.makespan_s = std::max(result.makespan_s, state[j].clock_s);
  double idle_total_s = 0.0;
  for (StageTimeline& timeline : result.stages) {
    timeline.idle_s = result.makespan_s - timeline.busy_s;
    timeline.internal_idle_s = timeline.last_end_s - timeline.first_start_s - timeline.busy_s;
    idle_total_s += timeline.idle_s;
  }
  result.step_time_s = result.makespan_s / schedule.mini_batches;
  if (result.makespan_s > 0.0) result.idle_fraction = idle_total_s / (k * result.makespan_s);
  return result;
}

}  // namespace interplace::placement
