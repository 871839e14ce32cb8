#include "interplace/placement/schedule.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
Strategy::Strategy(StrategyKind kind_, int n_)
    : kind(kind_), n(kind_ == StrategyKind::nwise ? n_ : 0) {
  if (kind == StrategyKind::nwise && n < 1) {
    throw_invalid("nwise:N needs N >= 1, got " + std::to_string(n_));
  }
}

Strategy::Strategy(std::string_view name) {
  if (name == "global") return;
  if (name == "local") {
    kind = StrategyKind::local;
    return;
  }
  if (name == "pairwise") {
    kind = StrategyKind::pairwise;
    return;
  }
  constexpr std::string_view prefix = "nwise:";
  if (name.substr(0, prefix.size()) == prefix) {
    const std::string_view digits = name.substr(prefix.size());
    int value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (!digits.empty() && error == std::errc() && end == digits.data() + digits.size() &&
        value >= 1) {
      kind = StrategyKind::nwise;
      n = value;
      return;
    }
  }
  throw_invalid("unknown strategy '" + std::string(name) +
                "' (valid: global, local, pairwise, nwise:N with N >= 1)");
}

std::string to_string(const Strategy& strategy) {
  switch (strategy.kind) {
    case StrategyKind::global:
      return "global";
    case StrategyKind::local:
      return "local";
    case StrategyKind::pairwise:
      return "pairwise";
    case StrategyKind::nwise:
      return "nwise:" + std::to_string(strategy.n);
  }
  throw_invalid("unknown strategy kind " + std::to_string(static_cast<int>(strategy.kind)));
}

int strategy_reach(const Strategy& strategy, int stage_count) {
  if (stage_count < 1)
    throw_invalid("stage count must be >= 1, got " + std::to_string(stage_count));
  const int global = stage_count - 1;
  switch (strategy.kind) {
    case StrategyKind::global:
      return global;
    case StrategyKind::local:
      return 0;
    case StrategyKind::pairwise:
      return std::min(1, global);
    case StrategyKind::nwise:
      return std::min(strategy.n - 1, global);
  }
  throw_invalid("unknown strategy kind " + std::to_string(static_cast<int>(strategy.kind)));
}

const std::vector<std::string>& strategy_forms() {
  static const std::vector<std::string> forms = {"global", "local", "pairwise", "nwise:N"};
  return forms;
}

namespace {

// Name tables: the parsers, to_string and help texts all read these.
constexpr std::array<std::pair<InterlockMode, const char*>, 2> kInterlockNames = {{
    {InterlockMode::single, "single"},
    {InterlockMode::sum, "sum"},
}};

template <typename Kind, size_t N>
std::vector<std::string> names_of(const std::array<std::pair<Kind, const char*>, N>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.second);
  return names;
}

template <typename Kind, size_t N>
Kind kind_by_name(const std::array<std::pair<Kind, const char*>, N>& table, std::string_view name,
                  const std::string& what) {
  std::string valid;
  for (const auto& [kind, known] : table) {
    if (name == known) return kind;
    valid += (valid.empty() ? "" : ", ") + std::string(known);
  }
  throw_invalid("unknown " + what + " '" + std::string(name) + "' (valid: " + valid + ")");
}

template <typename Kind, size_t N>
std::string name_of(const std::array<std::pair<Kind, const char*>, N>& table, Kind kind) {
  for (const auto& [k, name] : table) {
    if (k == kind) return name;
  }
  throw_invalid("unknown enum value " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

InterlockMode interlock_mode_by_name(std::string_view name) {
  return kind_by_name(kInterlockNames, name, "interlock mode");
}

const std::vector<std::string>& interlock_mode_names() {
  static const std::vector<std::string> names = names_of(kInterlockNames);
  return names;
}

std::string to_string(InterlockMode mode) {
  return name_of(kInterlockNames, mode);
}

namespace {

// The fields every schedule shares, after checking the request's counts.
Schedule schedule_header(const ScheduleRequest& request) {
  const int k = request.stage_count;
  const int reach = strategy_reach(request.strategy, k);
  // Bounded: the schedule holds every pass of every micro-batch of every mini-batch, so
  // an unbounded count would grow memory without end before anything is simulated (the
  // micro-batches are plan_pipeline's to check).
  if (request.mini_batches < 1 || request.mini_batches > kMaxMiniBatches) {
    throw_invalid("mini_batches must be in 1.." + std::to_string(kMaxMiniBatches) + ", got " +
                  std::to_string(request.mini_batches));
  }
  Schedule schedule;
  schedule.strategy = to_string(request.strategy);
  const PipelinePlan plan =
      plan_pipeline({.pipeline = request.pipeline,
                     .reach = reach,
                     .strategy = schedule.strategy,
                     .devices = k,
                     .virtual_stages = request.virtual_stages,
                     .micro_batches = request.micro_batches,
                     .interlock_sum = request.interlock == InterlockMode::sum});
  schedule.reach = reach;
  schedule.pipeline = plan.kind;
  schedule.stage_map = plan.stage_map;
  schedule.stage_count = k;
  schedule.virtual_stages = plan.virtual_stages;
  schedule.micro_batches = request.micro_batches;
  schedule.mini_batches = request.mini_batches;
  schedule.interlock = request.interlock;
  schedule.has_aux_head.assign(k, false);
  return schedule;
}

// The one pass that adds a stage chain's messages around a compute action of `device`
// (build_schedule's rule, schedule.hpp); an overlapped pair gets both halves' receives
// before it and both halves' sends after it.
void append_with_messages(std::vector<Action>& out, const Action& action, const Schedule& schedule,
                          int device) {
  const int last = schedule.stage_count * schedule.virtual_stages - 1;
  const auto message = [&](const Action& half, ActionKind kind, int peer, Payload payload) {
    out.push_back({.kind = kind,
                   .mini_batch = half.mini_batch,
                   .micro_batch = half.micro_batch,
                   .peer_stage = peer,
                   .payload = payload,
                   .loss_stage = payload == Payload::gradient ? half.loss_stage : -1,
                   .chunk = half.chunk});
  };
  const std::vector<Action> halves = compute_halves(action);
  for (const Action& half : halves) {
    const int stage = schedule.stage_of(device, half.chunk);
    if (half.kind == ActionKind::forward && stage > 0) {
      message(half, ActionKind::receive, stage - 1, Payload::activation);
    }
    if (half.kind == ActionKind::backward && stage < half.loss_stage) {
      message(half, ActionKind::receive, stage + 1, Payload::gradient);
    }
  }
  out.push_back(action);
  for (const Action& half : halves) {
    const int stage = schedule.stage_of(device, half.chunk);
    if (half.kind == ActionKind::forward && stage < last) {
      message(half, ActionKind::send, stage + 1, Payload::activation);
    }
    if (half.kind == ActionKind::backward && half.propagates_gradient) {
      message(half, ActionKind::send, stage - 1, Payload::gradient);
    }
  }
}

}  // namespace

Schedule build_schedule(const ScheduleRequest& request) {
  Schedule schedule = schedule_header(request);
  const int k = schedule.stage_count;
  const bool global = schedule.reach == k - 1;
  const bool sum = schedule.interlock == InterlockMode::sum;
  // Every non-last stage of a local or interlocking strategy has a head, as in the
  // interlocking-backpropagation study's code; one below the reach trains only itself.
  for (int t = 0; t <= k - 2; ++t) schedule.has_aux_head[t] = sum || !global;
  const PipelineInfo& info = pipeline_info(schedule.pipeline);
  for (int device = 0; device < k; ++device) {
    const std::vector<Action> compute = info.compute_actions(schedule, device);
    std::vector<Action> actions;
    for (int b = 0; b < schedule.mini_batches; ++b) {
      for (Action action : compute) {
        action.mini_batch = b;
        append_with_messages(actions, action, schedule, device);
      }
      actions.push_back({.kind = ActionKind::optimizer_step, .mini_batch = b});
    }
    schedule.stage_actions.push_back(std::move(actions));
  }
  return schedule;
}

Schedule node_level_schedule(const ScheduleRequest& request,
                             const std::vector<std::vector<NodeTask>>& device_tasks,
                             const Graph& graph, const Placement& placement) {
  Schedule schedule = schedule_header(request);
  const int k = schedule.stage_count;
  if (schedule.reach != k - 1 || request.pipeline != PipelineKind::gpipe ||
      request.interlock != InterlockMode::single) {
    throw_invalid(
        "a placement that is not a stage chain runs only global/gpipe with interlock "
        "mode single, not " +
        schedule.strategy + "/" + to_string(request.pipeline) + "/" + to_string(request.interlock));
  }
  if (static_cast<int>(device_tasks.size()) != k || placement.device_count != k) {
    throw_invalid("node_level_schedule: " + std::to_string(device_tasks.size()) +
                  " task lists and a placement on " + std::to_string(placement.device_count) +
                  " devices for " + std::to_string(k) + " stages");
  }
  require_valid_placement(graph, placement);
  const int64_t n = graph.node_count();
  const auto device_of = [&](NodeId id) { return placement.device_of_node[id]; };
  // By node: the other devices that consume its tensor, ascending.
  std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
  for (const Node& node : graph.nodes()) {
    std::vector<int>& to = consumers[static_cast<size_t>(node.id)];
    for (NodeId c : node.successors) {
      if (device_of(c) != device_of(node.id)) to.push_back(device_of(c));
    }
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
  }
  const auto is_data = [&](NodeId id) { return graph.node(id).op == "input"; };
  schedule.messages = MessageLevel::node;
  for (int d = 0; d < k; ++d) {
    const std::vector<NodeTask>& tasks = device_tasks[static_cast<size_t>(d)];
    // (micro-batch, remote producer): the index in `tasks` of this device's last backward
    // of a consumer of it, after which the summed gradient goes back.
    std::map<std::pair<int, NodeId>, size_t> last_consumer;
    std::vector<std::vector<NodeId>> gradients_after(tasks.size());  // by task: to send
    for (size_t i = 0; i < tasks.size(); ++i) {
      const NodeTask& t = tasks[i];
      if (t.node < 0 || t.node >= n || device_of(t.node) != d) {
        throw_invalid("node_level_schedule: device " + std::to_string(d) + " has a task of node " +
                      std::to_string(t.node) + ", which is not one of its nodes");
      }
      if (!t.backward) continue;
      for (NodeId p : graph.node(t.node).inputs) {
        if (device_of(p) != d && !is_data(p)) last_consumer[{t.micro_batch, p}] = i;
      }
    }
    for (const auto& [unit, i] : last_consumer) gradients_after[i].push_back(unit.second);
    std::vector<Action> actions;
    for (int b = 0; b < schedule.mini_batches; ++b) {
      const auto message = [&](ActionKind kind, Payload payload, int peer, NodeId node, int m) {
        actions.push_back({.kind = kind,
                           .mini_batch = b,
                           .micro_batch = m,
                           .peer_stage = peer,
                           .payload = payload,
                           .loss_stage = payload == Payload::gradient ? k - 1 : -1,
                           .node = node});
      };
      // (micro-batch, producer) whose tensor this device has received in this mini-batch.
      std::set<std::pair<int, NodeId>> taken;
      for (size_t i = 0; i < tasks.size(); ++i) {
        const NodeTask& t = tasks[i];
        const Node& node = graph.node(t.node);
        if (!t.backward) {
          for (NodeId p : node.inputs) {
            if (device_of(p) != d && taken.insert({t.micro_batch, p}).second) {
              message(ActionKind::receive, Payload::activation, device_of(p), p, t.micro_batch);
            }
          }
        } else if (!is_data(t.node)) {
          for (int peer : consumers[static_cast<size_t>(t.node)]) {
            message(ActionKind::receive, Payload::gradient, peer, t.node, t.micro_batch);
          }
        }
        actions.push_back({.kind = t.backward ? ActionKind::backward : ActionKind::forward,
                           .mini_batch = b,
                           .micro_batch = t.micro_batch,
                           .loss_stage = t.backward ? k - 1 : -1,
                           .updates_parameters = t.backward,
                           // Any device may consume another's tensors, not only stage > 0.
                           .propagates_gradient = t.backward,
                           .node = t.node});
        if (!t.backward) {
          for (int peer : consumers[static_cast<size_t>(t.node)]) {
            message(ActionKind::send, Payload::activation, peer, t.node, t.micro_batch);
          }
          continue;
        }
        for (NodeId p : gradients_after[i]) {
          message(ActionKind::send, Payload::gradient, device_of(p), p, t.micro_batch);
        }
      }
      actions.push_back({.kind = ActionKind::optimizer_step, .mini_batch = b});
    }
    schedule.stage_actions.push_back(std::move(actions));
  }
  return schedule;
}

}  // namespace interplace::placement
