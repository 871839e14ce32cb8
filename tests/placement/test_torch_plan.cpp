// The torch plan (torch_plan.hpp): split points at module boundaries of a hand-built graph
// with module paths, the refusals (a cut inside a module, a top-level op, a module called
// twice, no modules, stages out of node order, another strategy), the schedule's action
// lists in PyTorch's notation with the stage maps' indices, PyTorch's own orders
// (data/pytorch-schedule-orders.txt) and the JSON file.
#include <gtest/gtest.h>

#include "pytorch_orders.hpp"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/torch_plan.hpp"

namespace interplace::placement {
namespace {

NodeId add(Graph& graph, const std::string& name, std::vector<NodeId> inputs, int64_t parameters,
           const std::string& module) {
  NodeSpec spec;
  spec.name = name;
  spec.op = inputs.empty() ? "input" : "opaque";
  spec.inputs = std::move(inputs);
  spec.output_shape = {1, 4};
  spec.forward_flops = spec.op == "input" ? 0 : 100;
  spec.backward_flops = 2 * spec.forward_flops;
  spec.parameter_count = parameters;
  if (spec.op == "opaque") spec.attributes["source_op"] = std::string("op");
  spec.module = module;
  return graph.add_node(spec);
}

// An nn.TransformerEncoder-like model at ops granularity, in execution order:
//   0 x, 1 embed (10 parameters), per block b (4 nodes, 50 parameters):
//   encoder.layers.b.self_attn (20), encoder.layers.b.add (module encoder.layers.b: its own
//   op, input and attention), encoder.layers.b.linear1 (30), encoder.layers.b.add:1; then
//   select (the top-level x[:, 0], no module) and head (5).
Graph encoder_graph(int blocks) {
  Graph graph("encoder", 1);
  NodeId last = add(graph, "x", {}, 0, "");
  last = add(graph, "embed", {last}, 10, "embed");
  for (int b = 0; b < blocks; ++b) {
    const std::string block = "encoder.layers." + std::to_string(b);
    const NodeId attention = add(graph, block + ".self_attn", {last}, 20, block + ".self_attn");
    const NodeId sum = add(graph, block + ".add", {last, attention}, 0, block);
    const NodeId mlp = add(graph, block + ".linear1", {sum}, 30, block + ".linear1");
    last = add(graph, block + ".add:1", {sum, mlp}, 0, block);
  }
  last = add(graph, "select", {last}, 0, "");
  add(graph, "head", {last}, 5, "head");
  return graph;
}

// Stage s holds nodes [starts[s], starts[s+1]).
Placement stages_from(const Graph& graph, const std::vector<NodeId>& starts) {
  Placement placement{.device_count = static_cast<int>(starts.size()), .device_of_node = {}};
  for (NodeId id = 0; id < graph.node_count(); ++id) {
    int s = 0;
    while (s + 1 < static_cast<int>(starts.size()) && id >= starts[static_cast<size_t>(s) + 1]) {
      ++s;
    }
    placement.device_of_node.push_back(s);
  }
  return placement;
}

// The first node of block b in encoder_graph.
NodeId block_start(int b) {
  return 2 + 4 * b;
}

Schedule global(PipelineKind pipeline, int devices, int micro_batches, int virtual_stages = 1) {
  return build_schedule({.strategy = "global",
                         .pipeline = pipeline,
                         .stage_count = devices,
                         .virtual_stages = virtual_stages,
                         .micro_batches = micro_batches});
}

std::string error_of(const Graph& graph, const Placement& stages, const Schedule& schedule) {
  try {
    torch_plan(graph, stages, schedule);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string joined(const std::vector<std::string>& actions) {
  std::string out;
  for (const std::string& a : actions) out += (out.empty() ? "" : " ") + a;
  return out;
}

// The schedule's compute actions of mini-batch 0 on `rank`, read field by field: what the
// plan's list must say, action for action.
std::vector<std::string> compute_actions(const Schedule& schedule, int rank) {
  std::vector<std::string> out;
  const auto unit = [&](int chunk, const std::string& type, int micro_batch) {
    return std::to_string(schedule.stage_of(rank, chunk)) + type + std::to_string(micro_batch);
  };
  for (const Action& a : schedule.stage_actions[static_cast<size_t>(rank)]) {
    if (a.mini_batch != 0) continue;
    if (a.kind == ActionKind::forward) out.push_back(unit(a.chunk, "F", a.micro_batch));
    if (a.kind == ActionKind::backward) {
      out.push_back(unit(a.chunk, a.defers_parameters ? "I" : "B", a.micro_batch));
    }
    if (a.kind == ActionKind::backward_weight) out.push_back(unit(a.chunk, "W", a.micro_batch));
    if (a.kind == ActionKind::forward_backward) {
      out.push_back(
          "(" + unit(a.chunk, "F", a.micro_batch) + ";" +
          unit(a.backward_chunk, a.defers_parameters ? "I" : "B", a.backward_micro_batch) +
          ")OVERLAP_F_B");
    }
  }
  return out;
}

TEST(TorchPlan, SplitsAtTheBlockWhereAStageBegins) {
  const Graph graph = encoder_graph(4);
  const TorchPlan plan = torch_plan(graph, stages_from(graph, {0, block_start(2)}),
                                    global(PipelineKind::one_f_one_b, 2, 4));
  // The stage begins at encoder.layers.2.self_attn; the block around it begins there too
  // and runs an op of its own: the split point is the block.
  EXPECT_EQ(plan.split_points(), std::vector<std::string>{"encoder.layers.2"});
  ASSERT_EQ(plan.stages.size(), 2u);
  EXPECT_EQ(plan.stages[0].begins_at, "");
  EXPECT_EQ(plan.stages[0].first_node, "x");
  EXPECT_EQ(plan.stages[0].node_count, 10);
  EXPECT_EQ(plan.stages[0].parameter_count, 10 + 2 * 50);
  EXPECT_EQ(plan.stages[1].first_node, "encoder.layers.2.self_attn");
  EXPECT_EQ(plan.stages[1].node_count, 10);
  EXPECT_EQ(plan.stages[1].parameter_count, 2 * 50 + 5);
  EXPECT_EQ(plan.stages[0].parameter_count + plan.stages[1].parameter_count,
            graph.total_parameter_count());
  EXPECT_EQ(plan.graph, "encoder");
  EXPECT_EQ(plan.micro_batches, 4);

  // A cut between two submodules of a block is a module boundary: torch splits inside the
  // block's forward, before linear1's call.
  const TorchPlan inside = torch_plan(graph, stages_from(graph, {0, block_start(1) + 2}),
                                      global(PipelineKind::gpipe, 2, 2));
  EXPECT_EQ(inside.split_points(), std::vector<std::string>{"encoder.layers.1.linear1"});
  // Before the head, a leaf module.
  const TorchPlan head = torch_plan(graph, stages_from(graph, {0, graph.node_count() - 1}),
                                    global(PipelineKind::gpipe, 2, 2));
  EXPECT_EQ(head.split_points(), std::vector<std::string>{"head"});
}

TEST(TorchPlan, RefusesACutThatIsNoModuleBoundary) {
  const Graph graph = encoder_graph(2);
  const Schedule schedule = global(PipelineKind::gpipe, 2, 2);
  // Before block 0's add: module encoder.layers.0, whose self_attn is in stage 0.
  std::string error = error_of(graph, stages_from(graph, {0, block_start(0) + 1}), schedule);
  EXPECT_NE(error.find("stage 1 begins at node 'encoder.layers.0.add' inside module "
                       "'encoder.layers.0' (node 'encoder.layers.0.self_attn' of module "
                       "'encoder.layers.0.self_attn' is in an earlier stage): not a module "
                       "boundary."),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("HINT: import the network at --granularity modules:D"), std::string::npos)
      << error;
  // Before the top-level x[:, 0]: no module to split at.
  error = error_of(graph, stages_from(graph, {0, graph.node_count() - 2}), schedule);
  EXPECT_NE(error.find("begins at node 'select', an op of the top-level forward (no module)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("HINT: "), std::string::npos);
}

TEST(TorchPlan, RefusesAModuleCalledTwice) {
  // act runs twice (one nn.ReLU used in two places): a split before it would cut twice.
  Graph graph("twice", 1);
  NodeId last = add(graph, "x", {}, 0, "");
  last = add(graph, "conv1", {last}, 10, "conv1");
  last = add(graph, "act", {last}, 0, "act");
  last = add(graph, "conv2", {last}, 10, "conv2");
  add(graph, "act:1", {last}, 0, "act");
  const std::string error =
      error_of(graph, stages_from(graph, {0, 2}), global(PipelineKind::gpipe, 2, 1));
  EXPECT_NE(error.find("stage 1 begins at node 'act' of module 'act', whose nodes are not "
                       "consecutive ('act:1' comes after other modules' nodes): a module "
                       "called more than once is split before every call."),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("HINT: "), std::string::npos);
}

TEST(TorchPlan, RefusesAGraphWithoutModulesStagesOutOfOrderAndOtherStrategies) {
  Graph plain("plain", 1);
  NodeId last = add(plain, "x", {}, 0, "");
  last = add(plain, "a", {last}, 1, "");
  add(plain, "b", {last}, 1, "");
  std::string error =
      error_of(plain, stages_from(plain, {0, 2}), global(PipelineKind::gpipe, 2, 1));
  EXPECT_NE(error.find("graph 'plain' has no module paths"), std::string::npos) << error;
  EXPECT_NE(error.find("HINT: import the network with the importers"), std::string::npos);

  const Graph graph = encoder_graph(2);
  Placement shuffled = stages_from(graph, {0, block_start(1)});
  shuffled.device_of_node[3] = 1;  // a node of stage 1 among stage 0's
  error = error_of(graph, shuffled, global(PipelineKind::gpipe, 2, 1));
  EXPECT_NE(error.find("not contiguous in the graph's node order"), std::string::npos) << error;
  EXPECT_NE(error.find("HINT: --order topo with --placer contiguous or stages"), std::string::npos);

  error = error_of(graph, stages_from(graph, {0, block_start(1)}),
                   build_schedule({.strategy = "local",
                                   .pipeline = PipelineKind::one_f_one_b,
                                   .stage_count = 2,
                                   .micro_batches = 2}));
  EXPECT_NE(error.find("runs the global strategy"), std::string::npos) << error;
  EXPECT_NE(error.find("HINT: --strategy global"), std::string::npos);

  // A stage of the input alone, and a stage without a node.
  error = error_of(graph, stages_from(graph, {0, 1}), global(PipelineKind::gpipe, 2, 1));
  EXPECT_NE(error.find("stage 0 holds only the network's input ('x'): torch would run a stage "
                       "without an op. HINT: fewer stages"),
            std::string::npos)
      << error;
  Placement empty = stages_from(graph, {0});
  empty.device_count = 2;
  error = error_of(graph, empty, global(PipelineKind::gpipe, 2, 1));
  EXPECT_NE(error.find("stage 1 holds no node. HINT: "), std::string::npos) << error;

  // Four stages for a schedule of two.
  error = error_of(graph, stages_from(graph, {0, 2, block_start(1), graph.node_count() - 1}),
                   global(PipelineKind::gpipe, 2, 1));
  EXPECT_NE(error.find("the stage placement has 4 stages, the schedule runs 2"), std::string::npos)
      << error;
}

TEST(TorchPlan, OneFOneBListsAreTheSchedulesInPyTorchsNotation) {
  const Graph graph = encoder_graph(2);
  const Schedule schedule = global(PipelineKind::one_f_one_b, 2, 4);
  const TorchPlan plan = torch_plan(graph, stages_from(graph, {0, block_start(1)}), schedule);
  EXPECT_EQ(plan.pipeline, PipelineKind::one_f_one_b);
  EXPECT_EQ(plan.schedule.torch_class, TorchScheduleClass::one_f_one_b);
  EXPECT_EQ(to_string(plan.schedule.torch_class), "Schedule1F1B");
  EXPECT_TRUE(plan.schedule.class_runs_this_order);
  EXPECT_EQ(plan.ranks, 2);
  EXPECT_EQ(plan.stages_per_rank, 1);
  EXPECT_EQ(plan.rank_stages, (std::vector<std::vector<int>>{{0}, {1}}));
  // PyTorch's Schedule1F1B: rank r warms up K - r forwards (the last of them its first
  // steady forward), then one backward and one forward.
  EXPECT_EQ(joined(plan.actions[0]), "0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3");
  EXPECT_EQ(joined(plan.actions[1]), "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(plan.actions[static_cast<size_t>(r)], compute_actions(schedule, r));
  }
  // The optimiser step and the messages are not PyTorch actions; mini-batch 1 is another step.
  const Schedule two = build_schedule({.strategy = "global",
                                       .pipeline = PipelineKind::one_f_one_b,
                                       .stage_count = 2,
                                       .micro_batches = 4,
                                       .mini_batches = 2});
  EXPECT_EQ(torch_plan(graph, stages_from(graph, {0, block_start(1)}), two).actions, plan.actions);
}

TEST(TorchPlan, VirtualStagesNameEachRanksStagesByItsMap) {
  const Graph graph = encoder_graph(4);
  const Placement four = stages_from(graph, {0, block_start(1), block_start(2), block_start(3)});
  // Loop map: rank j holds stages j and j + K.
  const Schedule interleaved = global(PipelineKind::interleaved_1f1b, 2, 4, 2);
  const TorchPlan loop = torch_plan(graph, four, interleaved);
  EXPECT_EQ(loop.split_points(),
            (std::vector<std::string>{"encoder.layers.1", "encoder.layers.2", "encoder.layers.3"}));
  EXPECT_EQ(loop.rank_stages, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(loop.stage_map, StageMap::loop);
  EXPECT_EQ(loop.stages_per_rank, 2);
  std::vector<int> ranks;
  for (const TorchStage& s : loop.stages) ranks.push_back(s.rank);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(to_string(loop.schedule.torch_class), "ScheduleInterleaved1F1B");
  EXPECT_FALSE(loop.schedule.class_runs_this_order);  // its warm-up is another
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(loop.actions[static_cast<size_t>(r)], compute_actions(interleaved, r));
  }
  EXPECT_EQ(loop.actions[0].front(), "0F0");
  EXPECT_EQ(loop.actions[1].back(), "1B3");

  // V map (ZBV): rank j holds stages j and 2K-1-j.
  const Schedule zbv = global(PipelineKind::zbv, 2, 4, 2);
  const TorchPlan v = torch_plan(graph, four, zbv);
  EXPECT_EQ(v.rank_stages, (std::vector<std::vector<int>>{{0, 3}, {1, 2}}));
  EXPECT_EQ(v.stage_map, StageMap::v);
  ranks.clear();
  for (const TorchStage& s : v.stages) ranks.push_back(s.rank);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(to_string(v.schedule.torch_class), "ScheduleZBVZeroBubble");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(v.actions[static_cast<size_t>(r)], compute_actions(zbv, r));
  }

  // ZB-H1: no class in torch; its B and W.
  const TorchPlan zb =
      torch_plan(graph, stages_from(graph, {0, block_start(2)}), global(PipelineKind::zb_h1, 2, 2));
  EXPECT_EQ(zb.schedule.torch_class, TorchScheduleClass::none);
  EXPECT_EQ(to_string(zb.schedule.torch_class), "");
  EXPECT_EQ(joined(zb.actions[1]), "1F0 1I0 1F1 1I1 1W0 1W1");
}

using testing::pytorch_orders;

std::string without_overlap_suffix(std::string text) {
  for (size_t at; (at = text.find(")OVERLAP_F_B")) != std::string::npos;) {
    text.erase(at + 1, std::string(")OVERLAP_F_B").size() - 1);
  }
  return text;
}

// The plans' action lists of the three pipelines PyTorch's file has, on a graph of 2K
// blocks, one a stage, equal PyTorch's own per-rank orders.
TEST(TorchPlan, ActionListsArePyTorchsOwnOrders) {
  const std::map<std::string, std::string> orders = pytorch_orders();
  int compared = 0;
  for (const auto& [pipeline, name, v] :
       {std::tuple{PipelineKind::interleaved_zb, "InterleavedZeroBubble", 2},
        std::tuple{PipelineKind::zbv, "ZBVZeroBubble", 2},
        std::tuple{PipelineKind::dualpipev, "DualPipeV", 2}}) {
    for (int k : {2, 4}) {
      for (int m : {4, 8}) {
        const std::string key = std::string(name) + " K" + std::to_string(k) + " M" +
                                std::to_string(m) + " V" + std::to_string(v) + " rank";
        if (!orders.contains(key + "0")) continue;  // a count PyTorch refuses
        const Graph graph = encoder_graph(k * v);
        std::vector<NodeId> starts = {0};
        for (int b = 1; b < k * v; ++b) starts.push_back(block_start(b));
        const TorchPlan plan =
            torch_plan(graph, stages_from(graph, starts), global(pipeline, k, m, v));
        for (int r = 0; r < k; ++r) {
          EXPECT_EQ(without_overlap_suffix(joined(plan.actions[static_cast<size_t>(r)])),
                    orders.at(key + std::to_string(r)))
              << key << r;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, (2 + 2 + 4 + 4) + (2 + 2 + 4 + 4) + (2 + 2 + 4));
  // DualPipeV's overlapped pair in torch's own form, which its _Action.from_str reads.
  const Graph graph = encoder_graph(4);
  const TorchPlan dual =
      torch_plan(graph, stages_from(graph, {0, block_start(1), block_start(2), block_start(3)}),
                 global(PipelineKind::dualpipev, 2, 4, 2));
  EXPECT_EQ(dual.actions[0][7], "(0F3;3B1)OVERLAP_F_B");
  EXPECT_EQ(to_string(dual.schedule.torch_class), "ScheduleDualPipeV");
}

TEST(TorchPlan, TheJsonFileHoldsThePlan) {
  const Graph graph = encoder_graph(4);
  const TorchPlan plan =
      torch_plan(graph, stages_from(graph, {0, block_start(1), block_start(2), block_start(3)}),
                 global(PipelineKind::zbv, 2, 4, 2));
  const nlohmann::json json = nlohmann::json::parse(torch_plan_json(plan));
  EXPECT_EQ(json["format"], "interplace-torch-plan");
  EXPECT_EQ(json["format_version"], 1);
  EXPECT_EQ(json["graph"], "encoder");
  EXPECT_EQ(json["pipeline"], "zbv");
  EXPECT_EQ(json["schedule_class"], "ScheduleZBVZeroBubble");
  EXPECT_EQ(json["class_runs_this_order"], true);
  EXPECT_EQ(json["ranks"], 2);
  EXPECT_EQ(json["stages_per_rank"], 2);
  EXPECT_EQ(json["stage_map"], "v");
  EXPECT_EQ(json["n_microbatches"], 4);
  EXPECT_EQ(json["split_spec"], nlohmann::json::parse(R"({"encoder.layers.1": "BEGINNING",
      "encoder.layers.2": "BEGINNING", "encoder.layers.3": "BEGINNING"})"));
  ASSERT_EQ(json["stages"].size(), 4u);
  EXPECT_TRUE(json["stages"][0]["begins_at"].is_null());
  EXPECT_EQ(json["stages"][3], nlohmann::json::parse(R"({"stage": 3, "rank": 0,
      "begins_at": "encoder.layers.3", "first_node": "encoder.layers.3.self_attn",
      "nodes": 6, "parameters": 55})"));
  EXPECT_EQ(json["rank_stages"], nlohmann::json::parse("[[0, 3], [1, 2]]"));
  EXPECT_EQ(json["actions"][1].get<std::vector<std::string>>(), plan.actions[1]);
  // ZB-H1's class is null.
  const TorchPlan zb =
      torch_plan(graph, stages_from(graph, {0, block_start(2)}), global(PipelineKind::zb_h1, 2, 2));
  EXPECT_TRUE(nlohmann::json::parse(torch_plan_json(zb))["schedule_class"].is_null());
}

}  // namespace
}  // namespace interplace::placement
