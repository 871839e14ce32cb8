// The torch plan (torch_plan.hpp): split points at module boundaries and the schedule in
// torch.distributed.pipelining's terms.
#include "interplace/placement/torch_plan.hpp"

#include <fstream>
#include <string_view>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/json_text.hpp"

namespace interplace::placement {
namespace {

using detail::json_quote;

constexpr const char* kGranularityHint =
    "HINT: import the network at --granularity modules:D (e.g. modules:3, one node per "
    "transformer block: every cut between blocks is a module boundary) and place it again, "
    "or use a placer that cuts there (--placer contiguous or stages on such a graph)";

// `module` is `outer` or a module inside it ("encoder.layers.1.mlp" in "encoder.layers.1").
bool within(std::string_view module, std::string_view outer) {
  return module.size() >= outer.size() && module.substr(0, outer.size()) == outer &&
         (module.size() == outer.size() || module[outer.size()] == '.');
}

std::string quoted(const Node& node) {
  return "'" + node.name + "'";
}

void require_global_stage_schedule(const Schedule& schedule, int stage_count) {
  if (schedule.messages != MessageLevel::stage) {
    throw_invalid(
        "a torch plan needs a stage-level schedule (whole stages exchanging their "
        "boundary tensors), not a node-level one. HINT: a placer that makes stage chains "
        "(--placer contiguous or stages)");
  }
  if (schedule.stage_count < 1 || schedule.reach < schedule.stage_count - 1) {
    throw_invalid(
        "a torch plan runs the global strategy (torch.distributed.pipelining trains "
        "with the network's loss alone), not '" +
        schedule.strategy + "'. HINT: --strategy global");
  }
  const int expected = schedule.stage_count * schedule.virtual_stages;
  if (stage_count != expected) {
    throw_invalid("the stage placement has " + std::to_string(stage_count) +
                  " stages, the schedule runs " + std::to_string(expected) + " (" +
                  std::to_string(schedule.stage_count) + " ranks x " +
                  std::to_string(schedule.virtual_stages) +
                  " stages each). HINT: place devices x virtual stages stages");
  }
}

// First node of each stage; throws unless stage s holds one non-empty run of node ids,
// after stage s-1's.
std::vector<NodeId> stage_starts(const Graph& graph, const Placement& stages) {
  const auto& device = stages.device_of_node;
  const std::string hint =
      ". HINT: --order topo with --placer contiguous or stages (stages that are runs of the "
      "importer's node order, which is the module's execution order)";
  if (device.empty() || device.front() != 0) {
    throw_invalid("stage 0 does not begin at the graph's first node" + hint);
  }
  std::vector<NodeId> starts = {0};
  for (NodeId id = 1; id < graph.node_count(); ++id) {
    const int s = device[static_cast<size_t>(id)];
    const int previous = device[static_cast<size_t>(id) - 1];
    if (s == previous) continue;
    if (s != previous + 1) {
      throw_invalid(
          "the stages are not contiguous in the graph's node order (torch splits "
          "the program in execution order): node " +
          quoted(graph.node(id)) + " is on stage " + std::to_string(s) + " right after node " +
          quoted(graph.node(id - 1)) + " on stage " + std::to_string(previous) + hint);
    }
    starts.push_back(id);
  }
  const int held = static_cast<int>(starts.size());
  if (held != stages.device_count) {
    throw_invalid((held + 1 == stages.device_count
                       ? "stage " + std::to_string(held) + " holds"
                       : "stages " + std::to_string(held) + " to " +
                             std::to_string(stages.device_count - 1) + " hold") +
                  " no node" + hint);
  }
  // A stage of the network's inputs alone would be a torch stage without an op.
  for (int s = 0; s < held; ++s) {
    const NodeId end = s + 1 < held ? starts[static_cast<size_t>(s) + 1] : graph.node_count();
    bool computes = false;
    for (NodeId id = starts[static_cast<size_t>(s)]; id < end; ++id) {
      computes = computes || graph.node(id).op != "input";
    }
    if (!computes) {
      throw_invalid("stage " + std::to_string(s) + " holds only the network's input (" +
                    quoted(graph.node(starts[static_cast<size_t>(s)])) +
                    "): torch would run a stage without an op. HINT: fewer stages "
                    "(--devices), or a finer graph (--granularity ops or a deeper modules:D)");
    }
  }
  return starts;
}

// The split point of the stage beginning at node `first` (nodes before it in earlier
// stages); throws unless it is a module boundary (torch_plan.hpp). The first node's own
// module ran it, so it is called; of the modules around it, the outermost that begins here
// (no earlier node inside it), provably runs (an op of its own) and runs once (its nodes
// one run) is the split point: the block ("encoder.layers.1") rather than its first
// submodule ("encoder.layers.1.self_attn").
std::string split_point(const Graph& graph, NodeId first, int stage) {
  const Node& node = graph.node(first);
  const std::string where = "stage " + std::to_string(stage) + " begins at node " + quoted(node);
  if (node.module.empty()) {
    throw_invalid(where +
                  ", an op of the top-level forward (no module): torch can split only "
                  "before a module's call. " +
                  kGranularityHint);
  }
  const auto earlier_inside = [&](std::string_view module) -> std::optional<NodeId> {
    for (NodeId id = 0; id < first; ++id) {
      if (within(graph.node(id).module, module)) return id;
    }
    return std::nullopt;
  };
  if (const std::optional<NodeId> inside = earlier_inside(node.module)) {
    throw_invalid(where + " inside module '" + node.module + "' (node " +
                  quoted(graph.node(*inside)) + " of module '" + graph.node(*inside).module +
                  "' is in an earlier stage): not a module boundary. " + kGranularityHint);
  }
  // One call: the module's nodes are one run from `first` (torch splits before every call).
  const auto consecutive = [&](std::string_view module) -> std::optional<NodeId> {
    bool left = false;  // past the module's nodes
    for (NodeId id = first + 1; id < graph.node_count(); ++id) {
      const bool inside = within(graph.node(id).module, module);
      if (inside && left) return id;
      left = left || !inside;
    }
    return std::nullopt;
  };
  const auto runs_an_op = [&](std::string_view module) {
    for (const Node& other : graph.nodes()) {
      if (other.module == module) return true;
    }
    return false;
  };
  std::string point = node.module;
  const std::string& path = node.module;
  for (size_t dot = path.rfind('.'); dot != std::string::npos && dot > 0;
       dot = path.rfind('.', dot - 1)) {
    const std::string_view outer = std::string_view(path).substr(0, dot);
    if (earlier_inside(outer)) break;
    if (runs_an_op(outer) && !consecutive(outer)) point = std::string(outer);
  }
  if (const std::optional<NodeId> again = consecutive(point)) {
    throw_invalid(where + " of module '" + point + "', whose nodes are not consecutive (" +
                  quoted(graph.node(*again)) +
                  " comes after other modules' nodes): a module called more than once is "
                  "split before every call. " +
                  kGranularityHint);
  }
  return point;
}

std::string stage_map_name(StageMap map) {
  return map == StageMap::v ? "v" : "loop";
}

}  // namespace

TorchSchedule torch_schedule_of(PipelineKind pipeline) {
  switch (pipeline) {
    case PipelineKind::gpipe:
      return {TorchScheduleClass::gpipe, true};
    case PipelineKind::one_f_one_b:
      return {TorchScheduleClass::one_f_one_b, true};
    case PipelineKind::zb_h1:
      return {TorchScheduleClass::none, false};
    case PipelineKind::interleaved_1f1b:
      return {TorchScheduleClass::interleaved_1f1b, false};
    case PipelineKind::looped_bfs:
      return {TorchScheduleClass::looped_bfs, true};
    case PipelineKind::interleaved_zb:
      return {TorchScheduleClass::interleaved_zero_bubble, true};
    case PipelineKind::zbv:
      return {TorchScheduleClass::zbv_zero_bubble, true};
    case PipelineKind::dualpipev:
      return {TorchScheduleClass::dualpipev, true};
  }
  throw_invalid("unknown pipeline " + std::to_string(static_cast<int>(pipeline)));
}

std::string to_string(TorchScheduleClass torch_class) {
  switch (torch_class) {
    case TorchScheduleClass::none:
      return "";
    case TorchScheduleClass::gpipe:
      return "ScheduleGPipe";
    case TorchScheduleClass::one_f_one_b:
      return "Schedule1F1B";
    case TorchScheduleClass::interleaved_1f1b:
      return "ScheduleInterleaved1F1B";
    case TorchScheduleClass::looped_bfs:
      return "ScheduleLoopedBFS";
    case TorchScheduleClass::interleaved_zero_bubble:
      return "ScheduleInterleavedZeroBubble";
    case TorchScheduleClass::zbv_zero_bubble:
      return "ScheduleZBVZeroBubble";
    case TorchScheduleClass::dualpipev:
      return "ScheduleDualPipeV";
  }
  throw_invalid("unknown torch schedule class " + std::to_string(static_cast<int>(torch_class)));
}

std::vector<std::string> TorchPlan::split_points() const {
  std::vector<std::string> points;
  for (size_t s = 1; s < stages.size(); ++s) points.push_back(stages[s].begins_at);
  return points;
}

std::optional<std::string> torch_action_text(const Action& action, const Schedule& schedule,
                                             int rank) {
  const auto unit = [&](const Action& a, char type) {
    return std::to_string(schedule.stage_of(rank, a.chunk)) + type + std::to_string(a.micro_batch);
  };
  if (action.node >= 0) {
    throw_invalid("a node-level action has no PyTorch form: '" + to_string(action) + "'");
  }
  switch (action.kind) {
    case ActionKind::forward:
      return unit(action, 'F');
    case ActionKind::backward:
      if (!action.updates_parameters) {
        throw_invalid(
            "a backward that leaves the parameters alone (interlocking's) has no "
            "PyTorch form: '" +
            to_string(action) + "'");
      }
      return unit(action, action.defers_parameters ? 'I' : 'B');
    case ActionKind::backward_weight:
      return unit(action, 'W');
    case ActionKind::forward_backward: {
      std::string pair(1, '(');
      pair += unit(forward_half(action), 'F');
      pair += ';';
      pair += *torch_action_text(backward_half(action), schedule, rank);
      pair += ")OVERLAP_F_B";
      return pair;
    }
    case ActionKind::aux_forward:
    case ActionKind::aux_backward:
      throw_invalid("an auxiliary head's pass has no PyTorch form: '" + to_string(action) + "'");
    case ActionKind::send:
    case ActionKind::receive:
    case ActionKind::optimizer_step:
      return std::nullopt;
  }
  return std::nullopt;
}

TorchPlan torch_plan(const Graph& graph, const Placement& stages, const Schedule& schedule) {
  require_valid_placement(graph, stages);
  require_global_stage_schedule(schedule, stages.device_count);
  bool has_modules = false;
  for (const Node& node : graph.nodes()) has_modules = has_modules || !node.module.empty();
  if (!has_modules) {
    throw_invalid("graph '" + graph.name() +
                  "' has no module paths (no node has a `module`): its cuts cannot be named as "
                  "torch split points. HINT: import the network with the importers "
                  "(/usr/bin/python3 -m interplace_importers ..., docs/your-network.md), which "
                  "record every node's module, and pass the file with --graph-file");
  }
  const std::vector<NodeId> starts = stage_starts(graph, stages);

  TorchPlan plan;
  plan.graph = graph.name();
  plan.pipeline = schedule.pipeline;
  plan.schedule = torch_schedule_of(schedule.pipeline);
  plan.ranks = schedule.stage_count;
  plan.stages_per_rank = schedule.virtual_stages;
  plan.stage_map = schedule.stage_map;
  plan.micro_batches = schedule.micro_batches;
  for (int s = 0; s < stages.device_count; ++s) {
    const NodeId first = starts[static_cast<size_t>(s)];
    const NodeId end =
        s + 1 < stages.device_count ? starts[static_cast<size_t>(s) + 1] : graph.node_count();
    TorchStage stage{.index = s,
                     .rank = schedule.device_of_stage(s),
                     .begins_at = s == 0 ? "" : split_point(graph, first, s),
                     .first_node = graph.node(first).name,
                     .node_count = end - first};
    for (NodeId id = first; id < end; ++id) stage.parameter_count += graph.node(id).parameter_count;
    plan.stages.push_back(stage);
  }
  for (int rank = 0; rank < plan.ranks; ++rank) {
    std::vector<int>& held = plan.rank_stages.emplace_back();
    for (int chunk = 0; chunk < plan.stages_per_rank; ++chunk) {
      held.push_back(schedule.stage_of(rank, chunk));
    }
    std::vector<std::string>& list = plan.actions.emplace_back();
    for (const Action& action : schedule.stage_actions[static_cast<size_t>(rank)]) {
      if (action.mini_batch != 0) continue;
      if (std::optional<std::string> text = torch_action_text(action, schedule, rank)) {
        list.push_back(*text);
      }
    }
  }
  return plan;
}

std::string torch_plan_json(const TorchPlan& plan) {
  const std::string class_name = to_string(plan.schedule.torch_class);
  std::string out = "{\"format\": \"interplace-torch-plan\", \"format_version\": 1";
  out += ", \"graph\": " + json_quote(plan.graph);
  out += ", \"pipeline\": " + json_quote(to_string(plan.pipeline));
  out += ", \"schedule_class\": " + (class_name.empty() ? "null" : json_quote(class_name));
  out += ", \"class_runs_this_order\": ";
  out += plan.schedule.class_runs_this_order ? "true" : "false";
  out += ", \"ranks\": " + std::to_string(plan.ranks);
  out += ", \"stages_per_rank\": " + std::to_string(plan.stages_per_rank);
  out += ", \"stage_map\": " + json_quote(stage_map_name(plan.stage_map));
  out += ", \"n_microbatches\": " + std::to_string(plan.micro_batches);
  out += ",\n \"split_spec\": {";
  const std::vector<std::string> points = plan.split_points();
  for (size_t i = 0; i < points.size(); ++i) {
    out += (i ? ", " : "") + json_quote(points[i]) + ": \"BEGINNING\"";
  }
  out += "},\n \"stages\": [";
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const TorchStage& stage = plan.stages[s];
    out += s ? ",\n  " : "\n  ";
    out += "{\"stage\": " + std::to_string(stage.index) +
           ", \"rank\": " + std::to_string(stage.rank) +
           ", \"begins_at\": " + (stage.begins_at.empty() ? "null" : json_quote(stage.begins_at)) +
           ", \"first_node\": " + json_quote(stage.first_node) +
           ", \"nodes\": " + std::to_string(stage.node_count) +
           ", \"parameters\": " + std::to_string(stage.parameter_count) + "}";
  }
  out += "],\n \"rank_stages\": [";
  for (size_t r = 0; r < plan.rank_stages.size(); ++r) {
    out += r ? ", [" : "[";
    for (size_t c = 0; c < plan.rank_stages[r].size(); ++c) {
      out += (c ? ", " : "") + std::to_string(plan.rank_stages[r][c]);
    }
    out += "]";
  }
  out += "],\n \"actions\": [";
  for (size_t r = 0; r < plan.actions.size(); ++r) {
    out += r ? ",\n  [" : "\n  [";
    for (size_t i = 0; i < plan.actions[r].size(); ++i) {
      out += (i ? ", " : "") + json_quote(plan.actions[r][i]);
    }
    out += "]";
  }
  out += "]}\n";
  return out;
}

void write_torch_plan_file(const std::string& path, const TorchPlan& plan) {
  std::ofstream out(path);
  if (!out) throw_invalid("cannot write the torch plan file " + path);
  out << torch_plan_json(plan);
  out.close();
  if (!out) throw_invalid("writing the torch plan file " + path + " failed");
}

}  // namespace interplace::placement
