#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/step_estimate.hpp"
#include "interplace/placement/step_simulation.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement {
namespace {

class StepSimulation : public ::testing::Test {
 protected:
  StepSimulation()
      : graph_(build_model("resnet20")),
        model_(device_preset_by_name("cpu-core").device, device_preset_by_name("cpu-core").link),
        costs_(model_.node_costs(graph_)) {}

  Placement place(const std::string& placer, int k) const {
    PlacementRequest request{.device_count = k, .cost_model = model_};
    return placer_by_name(placer)(graph_, topological_order(graph_), request);
  }
  // Forward+backward seconds and parameters of one device's nodes.
  std::pair<double, int64_t> device_totals(const Placement& p, int d) const {
    double seconds = 0.0;
    int64_t parameters = 0;
    for (const Node& node : graph_.nodes()) {
      if (p.device_of_node[node.id] != d) continue;
      seconds += costs_.compute_s(node.id);
      parameters += node.parameter_count;
    }
    return {seconds, parameters};
  }

  Graph graph_;
  CostModel model_;
  NodeCosts costs_;
};

// The rl placer's reward object reports simulate_step's global step time exactly on chains
// (and wherever hosts are shared or working sets priced); on the other placements rl
// explores, the placers' fast estimate shifted by the mini-batch's draw, which never
// exceeds the simulated step (that adds one message per link at a time and the optimiser
// step to the same orders; the preset's link has no receive curve). One object serves placements
// one after another.
TEST_F(StepSimulation, GlobalStepTimeIsSimulateStepOnChainsAndTheFastEstimateElsewhere) {
  for (int micro_batches : {1, 3}) {
    GlobalStepTime step_time(graph_, costs_, model_, micro_batches);
    const double draw_s = model_.mini_batch_overhead_s(graph_.batch_size() * micro_batches);
    int chains = 0;
    for (const char* placer : {"contiguous", "random", "round-robin", "stages", "random"}) {
      for (int k : {2, 3}) {
        PlacementRequest request{.device_count = k, .cost_model = model_};
        request.seed = static_cast<uint64_t>(k * 7 + micro_batches);
        const Placement p = placer_by_name(placer)(graph_, topological_order(graph_), request);
        const bool chain = is_stage_chain(graph_, p);
        chains += chain ? 1 : 0;
        EXPECT_EQ(chain, !stage_chain_violation(graph_, p).has_value());
        const double simulated =
            simulate_step(graph_, p, costs_, model_, {.micro_batches = micro_batches}).step_time_s;
        if (chain) {
          EXPECT_EQ(step_time(p), simulated) << placer << " on " << k;
        } else {
          const double estimate =
              draw_s + estimate_step_time_s(graph_, costs_, model_.link(), p, micro_batches);
          EXPECT_EQ(step_time(p), estimate) << placer << " on " << k;
          EXPECT_LE(estimate, simulated * (1 + 1e-12)) << placer << " on " << k;
        }
      }
    }
    EXPECT_GT(chains, 0);
    EXPECT_LT(chains, 10);
  }
}

TEST_F(StepSimulation, GlobalOnAChainIsSimulatedWithGPipe) {
  const Placement p = place("contiguous", 2);
  const StepReport report =
      simulate_step(graph_, p, costs_, model_, {.strategy = "global", .micro_batches = 4});
  EXPECT_EQ(report.messages, MessageLevel::stage);
  EXPECT_EQ(report.reach, 1);
  EXPECT_EQ(report.pipeline, PipelineKind::gpipe);
  ASSERT_EQ(report.devices.size(), 2u);
  for (int d = 0; d < 2; ++d) {
    const auto [seconds, parameters] = device_totals(p, d);
    EXPECT_NEAR(report.devices[d].busy_s, 4 * seconds + optimizer_step_s(model_, parameters),
                1e-12);
    EXPECT_NEAR(report.devices[d].busy_s + report.devices[d].idle_s, report.step_time_s, 1e-12);
    EXPECT_FALSE(report.devices[d].has_aux_head);
  }
}

TEST_F(StepSimulation, LocalAddsAnAuxiliaryHeadBeforeEachBoundary) {
  const Placement p = place("contiguous", 2);
  ASSERT_FALSE(local_strategy_ineligibility(graph_, p).has_value());
  const StepReport report =
      simulate_step(graph_, p, costs_, model_, {.strategy = "local", .micro_batches = 3});
  EXPECT_EQ(report.reach, 0);
  EXPECT_FALSE(report.pipeline.has_value());
  EXPECT_TRUE(report.devices[0].has_aux_head);
  EXPECT_FALSE(report.devices[1].has_aux_head);
  const NodeId boundary = boundary_producers(graph_, p)[0];
  const AuxHeadCosts head = aux_head_costs(aux_head_graph(graph_, boundary), model_);
  const auto [seconds, parameters] = device_totals(p, 0);
  EXPECT_NEAR(report.devices[0].busy_s,
              3 * (seconds + head.forward_s + head.backward_s) +
                  optimizer_step_s(model_, parameters + head.parameter_count),
              1e-12);
  // GPipe gives way to the interlocked order under a local strategy (pipelines.hpp), as in
  // train and sweep; ZB-H1 is refused.
  EXPECT_EQ(simulate_step(graph_, p, costs_, model_,
                          {.strategy = "local", .pipeline = PipelineKind::gpipe})
                .step_time_s,
            simulate_step(graph_, p, costs_, model_, {.strategy = "local"}).step_time_s);
  EXPECT_THROW(simulate_step(graph_, p, costs_, model_,
                             {.strategy = "local", .pipeline = PipelineKind::zb_h1}),
               Error);
}

// Sum mode (schedule.hpp) gives every stage but the last a head: pairwise on 3 stages
// has one on stage 1 only, and in sum mode on stages 0 and 1, which costs stage 0 time.
TEST_F(StepSimulation, SumModeAddsTheFlowsOfEveryLossInReach) {
  // Three stages cut where one tensor crosses (after the first ReLU, after layer2.0's
  // output): contiguous might cut inside a block.
  Placement p{.device_count = 3, .device_of_node = {}};
  const NodeId cut1 = graph_.id_of("relu1"), cut2 = graph_.id_of("layer2.0.relu2");
  for (NodeId id = 0; id < graph_.node_count(); ++id) {
    p.device_of_node.push_back(id <= cut1 ? 0 : id <= cut2 ? 1 : 2);
  }
  ASSERT_FALSE(local_strategy_ineligibility(graph_, p).has_value());
  const StepReport single = simulate_step(graph_, p, costs_, model_, {.strategy = "pairwise"});
  const StepReport sum = simulate_step(graph_, p, costs_, model_,
                                       {.strategy = "pairwise", .interlock = InterlockMode::sum});
  // Stage 0 has a head in both modes; only with sum does its loss also train body 0
  // (one more backward pass through it).
  EXPECT_TRUE(single.devices[0].has_aux_head && sum.devices[0].has_aux_head);
  EXPECT_TRUE(single.devices[1].has_aux_head && sum.devices[1].has_aux_head);
  EXPECT_FALSE(sum.devices[2].has_aux_head);
  EXPECT_GT(sum.devices[0].busy_s, single.devices[0].busy_s);
}

// A placement that is not a chain runs the node-level list schedule, simulated by the same
// event simulator: the same numbers as simulating list_node_schedule, each device's compute
// for its nodes plus its optimiser step, and the global strategy with GPipe alone.
TEST_F(StepSimulation, NonChainsRunTheNodeLevelListScheduleForGlobalOnly) {
  const Placement p = place("round-robin", 3);
  const StepReport report =
      simulate_step(graph_, p, costs_, model_, {.strategy = "global", .micro_batches = 2});
  EXPECT_EQ(report.messages, MessageLevel::node);
  EXPECT_NE(report.node_level_reason.find("device"), std::string::npos);
  EXPECT_EQ(report.pipeline, PipelineKind::gpipe);
  const StepReport same =
      simulate_schedule(graph_, p, costs_, model_,
                        list_node_schedule(graph_, p, costs_, model_, PipelineKind::gpipe, 2));
  EXPECT_EQ(report.step_time_s, same.step_time_s);
  EXPECT_FALSE(report.timeline.empty());
  EXPECT_GE(report.step_time_s, estimate_step_time_s(graph_, costs_, model_.link(), p, 2));
  const auto [seconds, parameters] = device_totals(p, 1);
  EXPECT_GE(report.devices[1].busy_s, 2 * seconds + optimizer_step_s(model_, parameters) - 1e-12);
  EXPECT_NEAR(report.devices[1].busy_s + report.devices[1].idle_s, report.step_time_s, 1e-12);
  try {
    simulate_step(graph_, p, costs_, model_, {.pipeline = PipelineKind::one_f_one_b});
    FAIL() << "1F1B ran on a placement that is not a chain";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("HINT: --pipeline gpipe"), std::string::npos) << e.what();
  }
  try {
    simulate_step(graph_, p, costs_, model_, {.strategy = "pairwise"});
    FAIL() << "pairwise ran on a placement that is not a chain";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("only the global strategy"), std::string::npos);
  }
  EXPECT_THROW(simulate_step(graph_, p, costs_, model_, {.strategy = "sideways"}), Error);
  EXPECT_THROW(simulate_step(graph_, p, costs_, model_, {.micro_batches = 0}), Error);
}

// One planning path: simulate_step simulates the schedule plan_step_schedule plans (the one
// train and sweeps run), a stage-level one on a chain and the node-level one elsewhere.
TEST_F(StepSimulation, SimulateStepRunsThePlannedSchedule) {
  for (const std::string placer : {"contiguous", "round-robin"}) {
    const Placement p = place(placer, 3);
    const StepRequest request{.strategy = "global", .micro_batches = 4};
    const Schedule planned =
        plan_step_schedule(graph_, p, costs_, model_, step_schedule_request(request, 3));
    EXPECT_EQ(planned.messages, placer == "contiguous" ? MessageLevel::stage : MessageLevel::node);
    EXPECT_EQ(simulate_step(graph_, p, costs_, model_, request).step_time_s,
              simulate_schedule(graph_, p, costs_, model_, planned).step_time_s)
        << placer;
  }
  // A local strategy off a chain is refused with the reason, before any schedule.
  try {
    plan_step_schedule(graph_, place("round-robin", 3), costs_, model_,
                       {.strategy = Strategy("local"), .stage_count = 3, .micro_batches = 4});
    FAIL() << "local ran on a placement that is not a chain";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("strategy 'local' cannot run on this placement"),
              std::string::npos)
        << e.what();
  }
}

// The largest per-device peak against the budget: refused with both numbers and the
// budget's words; nothing checked at 0 bytes.
TEST_F(StepSimulation, MemoryBudgetRefusesTheLargestPeakAboveIt) {
  const StepReport report =
      simulate_step(graph_, place("contiguous", 2), costs_, model_, {.micro_batches = 2});
  int64_t peak = 0;
  for (const DeviceStep& d : report.devices) peak = std::max(peak, d.peak_memory_bytes);
  ASSERT_GT(peak, 0);
  MemoryBudget budget;
  budget.bytes = peak;
  EXPECT_NO_THROW(require_memory_fits(report, budget));
  budget.bytes = 0;
  EXPECT_NO_THROW(require_memory_fits(report, budget));
  try {
    require_memory_fits(report, {.bytes = peak - 1,
                                 .memory = "memory",
                                 .unit = "rank",
                                 .source = "MemAvailable / ranks",
                                 .hint = "more ranks"});
    FAIL() << "a peak above the budget passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    const std::string what = e.what();
    EXPECT_NE(what.find("does not fit in memory: needs "), std::string::npos) << what;
    EXPECT_NE(what.find(" GiB per rank, "), std::string::npos) << what;
    EXPECT_NE(what.find("(MemAvailable / ranks). HINT: more ranks"), std::string::npos) << what;
  }
}

// Data parallelism: each device's all-reduce carries its fp32 parameters (and its head's),
// priced by the ring formula on the preset's link, and R = 1 changes nothing.
TEST_F(StepSimulation, DataParallelAllReducesEachDevicesParameters) {
  const Placement p = place("contiguous", 2);
  const StepRequest one{.strategy = "global", .micro_batches = 4};
  StepRequest two = one;
  two.data_parallel = 2;
  const StepReport single = simulate_step(graph_, p, costs_, model_, one);
  const StepReport replicated = simulate_step(graph_, p, costs_, model_, two);
  EXPECT_EQ(single.data_parallel, 1);
  EXPECT_EQ(replicated.data_parallel, 2);
  double longest_s = 0.0;
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(single.devices[d].allreduce_s, 0.0);
    const double ring = ring_allreduce_s(model_.link(), 4 * device_totals(p, d).second, 2, d, 2);
    EXPECT_GT(ring, 0.0);
    EXPECT_NEAR(replicated.devices[d].allreduce_s, ring, 1e-15);
    EXPECT_NEAR(replicated.devices[d].busy_s, single.devices[d].busy_s, 1e-15);
    longest_s = std::max(longest_s, ring);
  }
  EXPECT_GT(replicated.step_time_s, single.step_time_s);
  EXPECT_LE(replicated.step_time_s, single.step_time_s + longest_s + 1e-15);
  // Local: the head's parameters are all-reduced too.
  StepRequest local{.strategy = "local", .micro_batches = 2};
  local.data_parallel = 4;
  const StepReport with_head = simulate_step(graph_, p, costs_, model_, local);
  const NodeId boundary = boundary_producers(graph_, p)[0];
  const AuxHeadCosts head = aux_head_costs(aux_head_graph(graph_, boundary), model_);
  EXPECT_NEAR(with_head.devices[0].allreduce_s,
              ring_allreduce_s(model_.link(),
                               4 * (device_totals(p, 0).second + head.parameter_count), 4, 0, 2),
              1e-15);
  // Not a chain: the node-level schedule's devices all-reduce at their optimiser steps, as
  // a chain's do.
  const Placement rr = place("round-robin", 3);
  StepRequest list{.strategy = "global", .micro_batches = 2};
  const double base = simulate_step(graph_, rr, costs_, model_, list).step_time_s;
  list.data_parallel = 2;
  const StepReport listed = simulate_step(graph_, rr, costs_, model_, list);
  double longest_list_s = 0.0;
  for (const DeviceStep& d : listed.devices)
    longest_list_s = std::max(longest_list_s, d.allreduce_s);
  EXPECT_GT(longest_list_s, 0.0);
  EXPECT_GT(listed.step_time_s, base);
  EXPECT_LE(listed.step_time_s, base + longest_list_s + 1e-15);
}

// With the profile's runs of several micro-batches in flight, each rank's compute is
// charged at its working set, each device's simulated peak memory in the schedule it runs
// (a stage chain's or the node-level one); the rl reward agrees.
TEST(WorkingSet, RanksPayTheirWorkingSet) {
  const Graph graph = build_model("resnet20");
  Profile profile;
  profile.device_name = "dev";
  profile.batch_size = graph.batch_size();
  for (const Node& node : graph.nodes()) {
    profile.nodes.push_back({node.name, 1e-4, 2e-4, 1e-4});
  }
  profile.runtime_forward_s = 1e-4 * graph.node_count();
  profile.runtime_backward_s = 2e-4 * graph.node_count();
  const DeviceSpec device{"dev", 1e12, 1e11, int64_t{1} << 40};
  const CostModel plain = CostModel::from_profile(profile, device);
  // With four micro-batches of the whole graph kept, forward x2 and backward x3; a rank
  // keeps its stage's share and pays the factor at that many bytes.
  profile.runtime_in_flight = {
      {4, {2 * profile.runtime_forward_s, 3 * profile.runtime_backward_s}}};
  const CostModel scaled = CostModel::from_profile(profile, device);
  const NodeCosts costs = plain.node_costs(graph);
  ASSERT_EQ(costs.forward_s, scaled.node_costs(graph).forward_s);  // the factor is not in them
  PlacementRequest request{.device_count = 2, .cost_model = plain};
  const Placement chain = placer_by_name("contiguous")(graph, topological_order(graph), request);
  for (int m : {1, 4}) {
    const StepReport a = simulate_step(graph, chain, costs, plain, {.micro_batches = m});
    const StepReport b = simulate_step(graph, chain, costs, scaled, {.micro_batches = m});
    for (int d = 0; d < 2; ++d) {
      const WorkingSetFactor f = scaled.working_set_factor(costs, b.devices[d].peak_memory_bytes);
      EXPECT_EQ(a.devices[d].peak_memory_bytes, b.devices[d].peak_memory_bytes);
      // One micro-batch kept is the profile's own case; four of the first stage's (the
      // large activations) are more than one of the whole graph's.
      if (m == 1 || d == 0) {
        EXPECT_EQ(f.forward == 1.0, m == 1) << f.forward;
      }
      EXPECT_GE(f.backward, 1.0);
      // busy = M (f.forward F + f.backward B) + the optimiser step, F and B the stage's sums.
      double forward_s = 0.0, backward_s = 0.0;
      for (const Node& node : graph.nodes()) {
        if (chain.device_of_node[node.id] != d) continue;
        forward_s += costs.forward_s[node.id];
        backward_s += costs.backward_s[node.id];
      }
      const double optimizer_s = a.devices[d].busy_s - m * (forward_s + backward_s);
      EXPECT_NEAR(b.devices[d].busy_s,
                  m * (f.forward * forward_s + f.backward * backward_s) + optimizer_s, 1e-9)
          << "M " << m << " device " << d;
    }
    GlobalStepTime reward(graph, costs, scaled, m);
    EXPECT_EQ(reward(chain), b.step_time_s);
  }
  request.seed = 3;
  const Placement scattered = placer_by_name("random")(graph, topological_order(graph), request);
  ASSERT_FALSE(is_stage_chain(graph, scattered));
  const StepReport a = simulate_step(graph, scattered, costs, plain, {.micro_batches = 4});
  const StepReport b = simulate_step(graph, scattered, costs, scaled, {.micro_batches = 4});
  EXPECT_GT(b.step_time_s, a.step_time_s);
  GlobalStepTime reward(graph, costs, scaled, 4);
  EXPECT_EQ(reward(scattered), b.step_time_s);
}

TEST(OptimizerStep, MemoryBoundUpdateOfWeightsGradientsAndState) {
  const DeviceSpec device{"dev", 1e12, 1e9, 1'000'000'000};
  const CostModel momentum(device, {}, OptimizerKind::sgd_momentum);
  const CostModel adamw(device, {}, OptimizerKind::adamw);
  // Reads weights, gradients, state; writes weights and state: (3 + 2 x state) x 4 bytes.
  EXPECT_DOUBLE_EQ(optimizer_step_s(momentum, 1000), 1000 * 4 * 5 / 1e9);
  EXPECT_DOUBLE_EQ(optimizer_step_s(adamw, 1000), 1000 * 4 * 7 / 1e9);
  EXPECT_EQ(optimizer_step_s(momentum, 0), 0.0);
}

// With a calibrated profile the step is the runtime's measured one per parameter (momentum
// SGD), scaled by the roofline's ratio for another optimiser (AdamW: 7 / 5 here).
TEST(OptimizerStep, CalibratedProfileChargesTheRuntimesRatePerParameter) {
  Profile profile;
  profile.device_name = "dev";
  profile.graph_parameter_count = 2000;
  profile.runtime_optimizer_s = 0.004;  // 2 us per parameter
  const DeviceSpec device{"dev", 1e12, 1e9, 1'000'000'000};
  const auto momentum = CostModel::from_profile(profile, device, OptimizerKind::sgd_momentum);
  const auto adamw = CostModel::from_profile(profile, device, OptimizerKind::adamw);
  EXPECT_DOUBLE_EQ(optimizer_step_s(momentum, 1000), 0.002);
  EXPECT_DOUBLE_EQ(optimizer_step_s(adamw, 1000), 0.002 * 7.0 / 5.0);
  profile.runtime_optimizer_s = std::numeric_limits<double>::quiet_NaN();  // not calibrated
  EXPECT_DOUBLE_EQ(optimizer_step_s(CostModel::from_profile(profile, device), 1000),
                   1000 * 4 * 5 / 1e9);
}

TEST(DevicePresets, NamedAndValid) {
  for (const DevicePreset& preset : device_presets()) {
    EXPECT_EQ(&device_preset_by_name(preset.name), &preset);
    EXPECT_NO_THROW(CostModel(preset.device, preset.link)) << preset.name;
    EXPECT_FALSE(preset.source.empty());
  }
  EXPECT_EQ(device_presets().front().name, "cpu-core");
  EXPECT_THROW(device_preset_by_name("tpu"), Error);
}

}  // namespace
}  // namespace interplace::placement
