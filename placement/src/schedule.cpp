#include "interplace/placement/schedule.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
namespace {

// A gradient flow: from the loss at `source` back to the body it trains at `destination`.
struct Flow {
  int source = 0;
  int destination = 0;
  bool updates_every_stage = false;  // the network's loss trains every body it passes

  bool updates(int stage) const { return updates_every_stage || stage == destination; }
};

std::vector<Flow> gradient_flows(int stage_count, int reach, InterlockMode mode) {
  const int last = stage_count - 1;
  std::vector<Flow> flows;
  if (mode == InterlockMode::sum) {
    for (int t = 0; t <= last - 1; ++t) flows.push_back({t, std::max(0, t - reach), true});
  } else if (reach < last) {
    for (int t = reach; t <= last - 1; ++t) flows.push_back({t, t - reach, false});
  }
  flows.push_back({last, std::max(0, last - reach), true});
  return flows;
}

class StageBuilder {
 public:
  StageBuilder(const Schedule& schedule, const std::vector<Flow>& flows, int stage)
      : schedule_(schedule), stage_(stage), last_(schedule.stage_count - 1) {
    for (const Flow& flow : flows) {
      if (flow.source == stage) own_flow_ = flow;
      if (flow.source > stage && flow.destination <= stage) arriving_.push_back(flow);
    }
    std::sort(arriving_.begin(), arriving_.end(),
              [](const Flow& a, const Flow& b) { return a.source < b.source; });
    for (const Flow& flow : arriving_) warm_up_ = std::max(warm_up_, flow.source - stage);
    warm_up_ = std::min(warm_up_, schedule.micro_batches);
  }

  std::vector<Action> build() {
    const int micro_batches = schedule_.micro_batches;
    const bool gpipe = schedule_.pipeline == PipelineKind::gpipe;
    for (int b = 0; b < schedule_.mini_batches; ++b) {
      if (gpipe) {
        for (int m = 0; m < micro_batches; ++m) forward_part(b, m, /*own_pass=*/false);
        for (int m = 0; m < micro_batches; ++m) backward_part(b, m, /*own_pass=*/true);
      } else {
        for (int m = 0; m < warm_up_; ++m) forward_part(b, m, true);
        for (int m = 0; m < micro_batches; ++m) {
          if (m + warm_up_ < micro_batches) forward_part(b, m + warm_up_, true);
          backward_part(b, m, false);
        }
      }
      // ZB-H1: the W's put off past the last B.
      while (next_weight_ < deferred_) weight_pass(b, next_weight_++);
      next_weight_ = deferred_ = 0;
      actions_.push_back({.kind = ActionKind::optimizer_step, .mini_batch = b});
    }
    return std::move(actions_);
  }

 private:
  void forward_part(int b, int m, bool own_pass) {
    if (stage_ > 0) message(ActionKind::receive, b, m, stage_ - 1, Payload::activation, -1);
    actions_.push_back({.kind = ActionKind::forward, .mini_batch = b, .micro_batch = m});
    if (stage_ < last_) message(ActionKind::send, b, m, stage_ + 1, Payload::activation, -1);
    if (schedule_.has_aux_head[stage_]) {
      actions_.push_back({.kind = ActionKind::aux_forward, .mini_batch = b, .micro_batch = m});
      actions_.push_back({.kind = ActionKind::aux_backward, .mini_batch = b, .micro_batch = m});
    }
    if (own_pass && own_flow_.source == stage_) backward_pass(b, m, own_flow_);
  }

  void backward_part(int b, int m, bool own_pass) {
    if (own_pass && own_flow_.source == stage_) backward_pass(b, m, own_flow_);
    for (const Flow& flow : arriving_) {
      message(ActionKind::receive, b, m, stage_ + 1, Payload::gradient, flow.source);
      backward_pass(b, m, flow);
    }
  }

  void backward_pass(int b, int m, const Flow& flow) {
    const bool propagates = stage_ > flow.destination;
    const bool defers = zero_bubble_ && flow.updates(stage_);
    actions_.push_back({.kind = ActionKind::backward,
                        .mini_batch = b,
                        .micro_batch = m,
                        .loss_stage = flow.source,
                        .updates_parameters = flow.updates(stage_),
                        .propagates_gradient = propagates,
                        .defers_parameters = defers});
    if (propagates) message(ActionKind::send, b, m, stage_ - 1, Payload::gradient, flow.source);
    if (!defers) return;
    // W(m - j) after B(m) on stage j: the B's of the first j micro-batches go without.
    ++deferred_;
    if (deferred_ - next_weight_ > stage_) weight_pass(b, next_weight_++);
  }

  void weight_pass(int b, int m) {
    actions_.push_back({.kind = ActionKind::backward_weight, .mini_batch = b, .micro_batch = m});
  }

  void message(ActionKind kind, int b, int m, int peer, Payload payload, int loss_stage) {
    actions_.push_back({.kind = kind,
                        .mini_batch = b,
                        .micro_batch = m,
                        .peer_stage = peer,
                        .payload = payload,
                        .loss_stage = loss_stage});
  }

  const Schedule& schedule_;
  int stage_;
  int last_;
  Flow own_flow_{-1, -1, false};
  std::vector<Flow> arriving_;
  int warm_up_ = 0;
  bool zero_bubble_ = schedule_.pipeline == PipelineKind::zb_h1;
  int deferred_ = 0;     // ZB-H1: B's of this mini-batch so far (micro-batches 0..deferred_-1)
  int next_weight_ = 0;  // ZB-H1: the micro-batch of the next W
  std::vector<Action> actions_;
};

// Interleaved 1F1B (schedule.hpp): device j's list, its V chunks in Megatron-LM's order.
std::vector<Action> interleaved_device_actions(const Schedule& schedule, int device) {
  const int k = schedule.stage_count;
  const int v = schedule.virtual_stages;
  const int passes = schedule.micro_batches * v;  // chunk forwards (and backwards) per device
  const int last = k * v - 1;                     // the model stage with the loss
  // Pass n of a direction: the groups of K micro-batches go through the chunks in turn
  // (ascending for forwards, descending for backwards), so that a group leaving device K-1
  // finds device 0 ready for its next chunk.
  const auto chunk_of = [&](int n, bool forward) {
    const int c = (n % (k * v)) / k;
    return forward ? c : v - 1 - c;
  };
  const auto micro_of = [&](int n) { return (n / (k * v)) * k + n % k; };
  // 1F1B's warm-up, K-1-j, plus the (V-1) K forwards of the chunks before the last one's
  // first group: the last stage's first backward comes right after its first forward.
  const int warm_up = std::min(passes, (v - 1) * k + k - 1 - device);
  std::vector<Action> actions;
  const auto message = [&](ActionKind kind, int b, int m, int c, int peer, Payload payload,
                           int loss_stage) {
    actions.push_back({.kind = kind,
                       .mini_batch = b,
                       .micro_batch = m,
                       .peer_stage = peer,
                       .payload = payload,
                       .loss_stage = loss_stage,
                       .chunk = c});
  };
  const auto forward = [&](int b, int n) {
    const int c = chunk_of(n, true);
    const int m = micro_of(n);
    const int stage = c * k + device;
    if (stage > 0) message(ActionKind::receive, b, m, c, stage - 1, Payload::activation, -1);
    actions.push_back({.kind = ActionKind::forward, .mini_batch = b, .micro_batch = m, .chunk = c});
    if (stage < last) message(ActionKind::send, b, m, c, stage + 1, Payload::activation, -1);
  };
  const auto backward = [&](int b, int n) {
    const int c = chunk_of(n, false);
    const int m = micro_of(n);
    const int stage = c * k + device;
    if (stage < last) message(ActionKind::receive, b, m, c, stage + 1, Payload::gradient, last);
    actions.push_back({.kind = ActionKind::backward,
                       .mini_batch = b,
                       .micro_batch = m,
                       .loss_stage = last,
                       .updates_parameters = true,
                       .propagates_gradient = stage > 0,
                       .chunk = c});
    if (stage > 0) message(ActionKind::send, b, m, c, stage - 1, Payload::gradient, last);
  };
  for (int b = 0; b < schedule.mini_batches; ++b) {
    for (int n = 0; n < warm_up; ++n) forward(b, n);
    for (int n = 0; n < passes; ++n) {
      if (n + warm_up < passes) forward(b, n + warm_up);
      backward(b, n);
    }
    actions.push_back({.kind = ActionKind::optimizer_step, .mini_batch = b});
  }
  return actions;
}

}  // namespace

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
constexpr std::array<std::pair<PipelineKind, const char*>, 4> kPipelineNames = {{
    {PipelineKind::gpipe, "gpipe"},
    {PipelineKind::one_f_one_b, "1f1b"},
    {PipelineKind::zb_h1, "zb-h1"},
    {PipelineKind::interleaved_1f1b, "interleaved-1f1b"},
}};
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

PipelineKind pipeline_by_name(std::string_view name) {
  return kind_by_name(kPipelineNames, name, "pipeline schedule");
}

const std::vector<std::string>& pipeline_names() {
  static const std::vector<std::string> names = names_of(kPipelineNames);
  return names;
}

std::string to_string(PipelineKind kind) {
  return name_of(kPipelineNames, kind);
}

int micro_batches_kept(PipelineKind pipeline, int micro_batches, int stages, int virtual_stages) {
  if (pipeline == PipelineKind::gpipe) return micro_batches;
  if (pipeline != PipelineKind::interleaved_1f1b) {
    return std::min(micro_batches, std::max(1, stages));
  }
  // Device 0's warm-up plus one: min(MV, VK) chunk passes of a V-th of the device each.
  const int v = std::max(1, virtual_stages);
  const int64_t chunk_passes = std::min<int64_t>(static_cast<int64_t>(micro_batches) * v,
                                                 static_cast<int64_t>(v) * std::max(1, stages));
  return static_cast<int>((chunk_passes + v - 1) / v);
}

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
  // an unbounded count would grow memory without end before anything is simulated.
  if (request.micro_batches < 1 || request.micro_batches > kMaxMicroBatches) {
    throw_invalid("micro_batches must be in 1.." + std::to_string(kMaxMicroBatches) + ", got " +
                  std::to_string(request.micro_batches));
  }
  if (request.mini_batches < 1 || request.mini_batches > kMaxMiniBatches) {
    throw_invalid("mini_batches must be in 1.." + std::to_string(kMaxMiniBatches) + ", got " +
                  std::to_string(request.mini_batches));
  }
  const bool global = reach == k - 1;
  if (!global && request.pipeline != PipelineKind::one_f_one_b) {
    throw_invalid("the " + to_string(request.pipeline) +
                  " schedule is for the global strategy only, not '" + to_string(request.strategy) +
                  "' (other strategies run 1f1b). HINT: --pipeline 1f1b, or --strategy global");
  }
  if ((request.pipeline == PipelineKind::zb_h1 ||
       request.pipeline == PipelineKind::interleaved_1f1b) &&
      request.interlock != InterlockMode::single) {
    throw_invalid("the " + to_string(request.pipeline) +
                  " schedule runs the network's loss alone (interlock mode single), not " +
                  to_string(request.interlock));
  }
  const int v = request.virtual_stages;
  if (v < 1 || v > kMaxVirtualStages) {
    throw_invalid("virtual_stages must be in 1.." + std::to_string(kMaxVirtualStages) + ", got " +
                  std::to_string(v));
  }
  if (v != 1 && request.pipeline != PipelineKind::interleaved_1f1b) {
    throw_invalid("virtual_stages " + std::to_string(v) +
                  " is for the interleaved-1f1b schedule, not " + to_string(request.pipeline));
  }
  // Megatron-LM's requirement: a group of K micro-batches per chunk.
  if (v > 1 && request.micro_batches % k != 0) {
    throw_invalid("the interleaved-1f1b schedule with " + std::to_string(v) +
                  " virtual stages needs micro_batches a multiple of the " + std::to_string(k) +
                  " devices, got " + std::to_string(request.micro_batches));
  }
  Schedule schedule;
  schedule.strategy = to_string(request.strategy);
  schedule.reach = reach;
  schedule.pipeline = request.pipeline;
  schedule.stage_count = k;
  schedule.virtual_stages = v;
  schedule.micro_batches = request.micro_batches;
  schedule.mini_batches = request.mini_batches;
  schedule.interlock = request.interlock;
  schedule.has_aux_head.assign(k, false);
  return schedule;
}

}  // namespace

Schedule build_schedule(const ScheduleRequest& request) {
  Schedule schedule = schedule_header(request);
  const int k = schedule.stage_count;
  const int reach = schedule.reach;
  const bool global = reach == k - 1;
  const bool sum = request.interlock == InterlockMode::sum;
  // Every non-last stage of a local or interlocking strategy has a head, as in the
  // interlocking-backpropagation study's code; one below the reach trains only itself.
  for (int t = 0; t <= k - 2; ++t) schedule.has_aux_head[t] = sum || !global;
  if (request.pipeline == PipelineKind::interleaved_1f1b) {
    for (int device = 0; device < k; ++device) {
      schedule.stage_actions.push_back(interleaved_device_actions(schedule, device));
    }
    return schedule;
  }
  const std::vector<Flow> flows = gradient_flows(k, reach, request.interlock);
  for (int stage = 0; stage < k; ++stage) {
    schedule.stage_actions.push_back(StageBuilder(schedule, flows, stage).build());
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
