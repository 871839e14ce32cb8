#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/simulator.hpp"

namespace interplace::placement {
namespace {

PipelineCosts uniform(int k, double forward_s, double backward_s, LinkSpec link = {}) {
  PipelineCosts costs;
  costs.link = link;
  costs.stages.assign(k, StageCosts{.forward_s = forward_s,
                                    .backward_s = backward_s,
                                    .backward_input_s = backward_s,
                                    .output_bytes = 1000,
                                    .parameter_state_bytes = 500,
                                    .activation_bytes = 100});
  return costs;
}

SimulationResult run(const std::string& strategy, const PipelineCosts& costs, int m, int b = 1,
                     PipelineKind pipeline = PipelineKind::one_f_one_b) {
  return simulate(build_schedule({.strategy = strategy,
                                  .pipeline = pipeline,
                                  .stage_count = static_cast<int>(costs.stages.size()),
                                  .micro_batches = m,
                                  .mini_batches = b}),
                  costs);
}

TEST(Simulator, GPipeIdleFractionIsTheBubbleFormula) {
  for (int k : {1, 2, 4, 7}) {
    for (int m : {1, 3, 8, 16}) {
      const SimulationResult result =
          run("global", uniform(k, 1.0, 2.0), m, 1, PipelineKind::gpipe);
      const double expected = static_cast<double>(k - 1) / (m + k - 1);
      EXPECT_NEAR(result.idle_fraction, expected, 1e-12) << "K " << k << " M " << m;
      EXPECT_DOUBLE_EQ(result.makespan_s, (m + k - 1) * 3.0) << "K " << k << " M " << m;
      for (const StageTimeline& stage : result.stages) EXPECT_DOUBLE_EQ(stage.busy_s, 3.0 * m);
    }
  }
}

// Zero bubble (Qi et al., ICLR 2024): at T_F = T_B = T_W and free links, ZB-H1 leaves
// each stage idle (K-1)(T_F + T_B - T_W) per mini-batch against 1F1B's (K-1)(T_F + T_B +
// T_W), for M >= K. Here T_F = T_B = T_W = 1: a whole backward 2, its input part 1.
TEST(Simulator, ZbH1BubbleIsTheZeroBubblePapersFormula) {
  for (int k : {2, 3, 4, 6}) {
    for (int m : {k, 8, 16}) {
      if (m < k) continue;
      PipelineCosts costs = uniform(k, 1.0, 2.0);
      for (StageCosts& stage : costs.stages) stage.backward_input_s = 1.0;
      const SimulationResult zb = run("global", costs, m, 1, PipelineKind::zb_h1);
      const SimulationResult one_f_one_b = run("global", costs, m);
      const std::string where = "K " + std::to_string(k) + " M " + std::to_string(m);
      const double work = 3.0 * m;
      EXPECT_DOUBLE_EQ(zb.makespan_s, work + (k - 1) * (1.0 + 1.0 - 1.0)) << where;
      EXPECT_DOUBLE_EQ(one_f_one_b.makespan_s, work + (k - 1) * (1.0 + 1.0 + 1.0)) << where;
      for (const StageTimeline& stage : zb.stages) {
        EXPECT_DOUBLE_EQ(stage.busy_s, work) << where;
        EXPECT_DOUBLE_EQ(stage.idle_s, k - 1.0) << where;
      }
      EXPECT_NEAR(zb.idle_fraction, (k - 1.0) / (3.0 * m + k - 1.0), 1e-12) << where;
      EXPECT_NEAR(one_f_one_b.idle_fraction, (k - 1.0) / (m + k - 1.0), 1e-12) << where;
    }
  }
}

// Interleaved 1F1B (Narayanan et al., SC 2021, section 2.2.2): with t_f and t_b a whole
// device's forward and backward of a micro-batch, the bubble is (K-1)(t_f + t_b)/V against
// the ideal M(t_f + t_b). Here every chunk (a V-th of a device) takes 1 for F and 1 for B,
// so t_f = t_b = V: every device is busy 2MV and idles 2(K-1) per mini-batch, makespan
// 2MV + 2(K-1), idle fraction (K-1)/(VM + K-1); V = 1 is 1F1B's (K-1)/(M+K-1).
SimulationResult run_interleaved(const PipelineCosts& costs, int k, int v, int m, int b = 1) {
  return simulate(build_schedule({.strategy = "global",
                                  .pipeline = PipelineKind::interleaved_1f1b,
                                  .stage_count = k,
                                  .virtual_stages = v,
                                  .micro_batches = m,
                                  .mini_batches = b}),
                  costs);
}

TEST(Simulator, InterleavedBubbleIsTheMegatronPapersFormula) {
  for (int k : {1, 2, 3, 4, 6, 8}) {
    for (int v : {1, 2, 3, 4}) {
      for (int groups : {1, 2, 4}) {
        const int m = groups * k;
        const std::string where =
            "K " + std::to_string(k) + " V " + std::to_string(v) + " M " + std::to_string(m);
        const SimulationResult result = run_interleaved(uniform(k * v, 1.0, 1.0), k, v, m);
        ASSERT_EQ(result.stages.size(), static_cast<size_t>(k)) << where;
        EXPECT_DOUBLE_EQ(result.makespan_s, 2.0 * m * v + 2.0 * (k - 1)) << where;
        for (const StageTimeline& device : result.stages) {
          EXPECT_DOUBLE_EQ(device.busy_s, 2.0 * m * v) << where;
          EXPECT_DOUBLE_EQ(device.idle_s, 2.0 * (k - 1)) << where;
        }
        EXPECT_NEAR(result.idle_fraction, (k - 1.0) / (v * m + k - 1.0), 1e-12) << where;
      }
    }
  }
  // Unequal passes: the bubble is still (K-1)(t_f + t_b)/V, (K-1) chunk forwards and
  // backwards.
  for (int k : {2, 3, 4, 8}) {
    for (int v : {2, 3}) {
      for (const auto& [f, bwd] : {std::pair{1.0, 2.0}, std::pair{2.0, 1.0}}) {
        const int m = 2 * k;
        const SimulationResult result = run_interleaved(uniform(k * v, f, bwd), k, v, m);
        EXPECT_DOUBLE_EQ(result.makespan_s, m * v * (f + bwd) + (k - 1) * (f + bwd))
            << "K " << k << " V " << v << " F " << f << " B " << bwd;
      }
    }
  }
  // The same work as 1F1B on K stages (each of V chunks' costs), a V-th of its bubble.
  const SimulationResult one_f_one_b = run("global", uniform(4, 2.0, 2.0), 8);
  const SimulationResult two_chunks = run_interleaved(uniform(4 * 2, 1.0, 1.0), 4, 2, 8);
  EXPECT_DOUBLE_EQ(one_f_one_b.makespan_s - 32.0, 2.0 * (two_chunks.makespan_s - 32.0));
}

// Memory: a device holds its V stages' parameter state, and each chunk pass's activations
// from its forward to its backward: device j at most min(MV, VK - j) chunk passes, device
// 0 the most (VK chunk passes of a V-th each: 1F1B's K micro-batches).
TEST(Simulator, InterleavedKeepsVKChunkPassesOnDeviceZero) {
  const int k = 4, v = 2, m = 8;
  const SimulationResult result = run_interleaved(uniform(k * v, 1.0, 2.0), k, v, m);
  for (int j = 0; j < k; ++j) {
    EXPECT_EQ(result.stages[j].peak_memory_bytes, v * 500 + 100 * std::min(m * v, v * k - j))
        << "device " << j;
  }
  EXPECT_EQ(result.stages[0].peak_memory_bytes,
            v * 500 + 100 * v * micro_batches_kept(PipelineKind::interleaved_1f1b, m, k, v));
}

// Messages cross the links between devices, also from the last device back to device 0
// (stage K-1 to stage K): with a link cost, each crossing delays the next chunk.
TEST(Simulator, InterleavedPaysEveryBoundaryOnItsDeviceLink) {
  const LinkSpec link{0.5, 1000.0 / 0.25};  // 0.75 per 1000-byte message
  const SimulationResult free = run_interleaved(uniform(2 * 2, 1.0, 1.0), 2, 2, 2);
  const SimulationResult paid = run_interleaved(uniform(2 * 2, 1.0, 1.0, link), 2, 2, 2);
  EXPECT_DOUBLE_EQ(free.makespan_s, 10.0);
  EXPECT_GT(paid.makespan_s, free.makespan_s);
  // Forward of micro-batch 0 through the 4 stages crosses 3 links, its backward 3 more.
  EXPECT_GE(paid.makespan_s, 8.0 + 6 * 0.75);
}

// ZB-H1's B costs the input gradient, W the rest of the backward; a stage keeps a
// micro-batch's activations until its W: stage 0 peaks at 1F1B's K micro-batches, and so
// do the later stages (each holds at most K between F and W).
TEST(Simulator, ZbH1SplitsTheBackwardCostAndKeepsActivationsUntilW) {
  const int k = 4;
  PipelineCosts costs = uniform(k, 1.0, 3.0);
  for (StageCosts& stage : costs.stages) stage.backward_input_s = 1.25;
  for (int m : {2, 8}) {
    const SimulationResult zb = run("global", costs, m, 1, PipelineKind::zb_h1);
    const SimulationResult one_f_one_b = run("global", costs, m);
    for (int j = 0; j < k; ++j) {
      EXPECT_DOUBLE_EQ(zb.stages[j].busy_s, m * 4.0) << "stage " << j;
      EXPECT_EQ(zb.stages[j].peak_memory_bytes, 500 + 100 * std::min(m, k)) << "stage " << j;
    }
    EXPECT_EQ(zb.stages[0].peak_memory_bytes, one_f_one_b.stages[0].peak_memory_bytes);
    EXPECT_LT(zb.makespan_s, one_f_one_b.makespan_s) << "M " << m;
  }
}

// Two stages on one host that slow each other down by 2 while both compute, GPipe, M = 2,
// forward 1, backward 2, by hand: F0 [0, 1] alone; F1 on stage 0 and F0 on stage 1 share
// from 1 to 3; stage 1's F1 [3, 4] and first backward [4, 6] alone; then both stages run a
// backward of 2 at once, [6, 10]; stage 0's last backward alone [10, 12]. Unshared: 9.
TEST(Simulator, StagesSharingAHostSlowEachOtherDown) {
  PipelineCosts costs = uniform(2, 1.0, 2.0);
  const SimulationResult alone = run("global", costs, 2, 1, PipelineKind::gpipe);
  EXPECT_DOUBLE_EQ(alone.makespan_s, 9.0);
  costs.sharing.table.slowdown[2] = {1.0, 2.0};
  costs.sharing.host_of_device = {0, 0};
  const SimulationResult shared = run("global", costs, 2, 1, PipelineKind::gpipe);
  EXPECT_DOUBLE_EQ(shared.makespan_s, 12.0);
  for (const StageTimeline& stage : shared.stages) EXPECT_DOUBLE_EQ(stage.busy_s, 9.0);
  // Fill and drain run alone: the K = 2, M = 1 chain never computes on both stages at once.
  EXPECT_DOUBLE_EQ(run("global", costs, 1, 1, PipelineKind::gpipe).makespan_s,
                   run("global", uniform(2, 1.0, 2.0), 1, 1, PipelineKind::gpipe).makespan_s);
  // Factors of 1, or stages on separate hosts, change nothing, trace included.
  costs.sharing.table.slowdown[2] = {1.0, 1.0};
  const SimulationResult ones = run("global", costs, 2, 1, PipelineKind::gpipe);
  costs.sharing.table.slowdown[2] = {1.0, 2.0};
  costs.sharing.host_of_device = {0, 1};
  const SimulationResult apart = run("global", costs, 2, 1, PipelineKind::gpipe);
  for (const SimulationResult* other : {&ones, &apart}) {
    EXPECT_DOUBLE_EQ(other->makespan_s, alone.makespan_s);
    ASSERT_EQ(other->trace.size(), alone.trace.size());
    for (size_t i = 0; i < alone.trace.size(); ++i) {
      EXPECT_DOUBLE_EQ(other->trace[i].end_s, alone.trace[i].end_s) << i;
    }
  }
}

// The runtime draws each mini-batch on every rank before the rank's first action of it: the
// same GPipe K = 2, M = 2 case with 0.5 of it starts every stage 0.5 later (9.5), or, on
// one host with factor 2 while both draw, 1 later (13); it is not busy time.
TEST(Simulator, EveryStageDrawsTheMiniBatchFirst) {
  PipelineCosts costs = uniform(2, 1.0, 2.0);
  costs.mini_batch_overhead_s = 0.5;
  const SimulationResult apart = run("global", costs, 2, 1, PipelineKind::gpipe);
  EXPECT_DOUBLE_EQ(apart.makespan_s, 9.5);
  for (const StageTimeline& stage : apart.stages) EXPECT_DOUBLE_EQ(stage.busy_s, 6.0);
  EXPECT_DOUBLE_EQ(apart.stages[0].first_start_s, 0.5);
  costs.sharing.table.slowdown[2] = {1.0, 2.0};
  costs.sharing.host_of_device = {0, 0};
  EXPECT_DOUBLE_EQ(run("global", costs, 2, 1, PipelineKind::gpipe).makespan_s, 13.0);
  // Two mini-batches: drawn twice per stage; stage 0 draws the second right after its
  // first optimiser step, not before the first mini-batch ends everywhere.
  costs = uniform(2, 1.0, 2.0);
  const double two = run("global", costs, 1, 2, PipelineKind::gpipe).makespan_s;
  costs.mini_batch_overhead_s = 0.5;
  EXPECT_GT(run("global", costs, 1, 2, PipelineKind::gpipe).makespan_s, two + 0.5);
  EXPECT_LE(run("global", costs, 1, 2, PipelineKind::gpipe).makespan_s, two + 1.0);
  costs.mini_batch_overhead_s = -1.0;
  EXPECT_THROW(run("global", costs, 1), Error);
}

TEST(Simulator, OneFOneBMatchesGPipeTimeWithLessActivationMemory) {
  const int k = 4;
  const int m = 8;
  const SimulationResult gpipe = run("global", uniform(k, 1.0, 2.0), m, 1, PipelineKind::gpipe);
  const SimulationResult one_f_one_b = run("global", uniform(k, 1.0, 2.0), m);
  EXPECT_DOUBLE_EQ(one_f_one_b.makespan_s, gpipe.makespan_s);
  EXPECT_NEAR(one_f_one_b.idle_fraction, gpipe.idle_fraction, 1e-12);
  for (int j = 0; j < k; ++j) {
    // GPipe keeps all M micro-batches; 1F1B at most K - j (warm-up plus one).
    EXPECT_EQ(gpipe.stages[j].peak_memory_bytes, 500 + 100 * m);
    EXPECT_EQ(one_f_one_b.stages[j].peak_memory_bytes, 500 + 100 * (k - j)) << "stage " << j;
  }
}

TEST(Simulator, CommunicationOnTheCriticalPath) {
  // Two stages, one micro-batch: F0, activation over the link, F1, B1, gradient back, B0.
  PipelineCosts costs = uniform(2, 1.0, 2.0, {.latency_s = 0.25, .bandwidth_bytes_per_s = 4000.0});
  costs.stages[0].output_bytes = 2000;  // 0.5 s on the wire each way
  const SimulationResult result = run("global", costs, 1);
  EXPECT_DOUBLE_EQ(result.makespan_s, 1 + 0.75 + 1 + 2 + 0.75 + 2);
  EXPECT_DOUBLE_EQ(result.stages[0].busy_s, 3.0);
  EXPECT_DOUBLE_EQ(result.stages[0].internal_idle_s, 0.75 + 1 + 2 + 0.75);
  // One message at a time per direction: three activations of 0.75 s leave stage 0 at
  // 1, 2, 3 and arrive at 1.75, 2.75, 3.75; the link is not the bottleneck here...
  const SimulationResult three = run("global", costs, 3, 1, PipelineKind::gpipe);
  // ...but with a slow link they queue: each takes 2.25 s, arriving at 3.25, 5.5, 7.75.
  costs.link.bandwidth_bytes_per_s = 1000.0;
  const SimulationResult queued = run("global", costs, 3, 1, PipelineKind::gpipe);
  EXPECT_GT(queued.makespan_s, three.makespan_s);
  // Stage 1: forwards [3.25, 4.25], [5.5, 6.5], [7.75, 8.75]; backwards end at 10.75,
  // 12.75, 14.75; the gradients queue too and arrive at 13, 15.25, 17.5; stage 0's
  // backwards end at 15, 17.25, 19.5.
  EXPECT_DOUBLE_EQ(queued.makespan_s, 19.5);
}

// The receiver's own share of a message (LinkSpec::receive_cpu) is compute on the receiving
// stage after the message is in; the rest of the transfer is in flight. Two stages, one
// micro-batch, 0.75 s per message of which 0.25 s is the receiver's: F0 [0, 1], in flight
// 0.5, stage 1 receives [1.5, 1.75], F1 [1.75, 2.75], B1 [2.75, 4.75], in flight to 5.25,
// stage 0 receives [5.25, 5.5], B0 [5.5, 7.5]: the same makespan as a 0.75 s delay when
// each receiver waits; busy time grows by the receiver's share.
TEST(Simulator, TheReceiverPaysItsShareOfEachMessage) {
  PipelineCosts costs = uniform(2, 1.0, 2.0, {.latency_s = 0.25, .bandwidth_bytes_per_s = 4000.0});
  costs.stages[0].output_bytes = 2000;  // 0.75 s each way
  const SimulationResult delay_only = run("global", costs, 1);
  costs.link.receive_cpu = {{1, 0.25}, {int64_t{1} << 40, 0.25}};
  const SimulationResult shared = run("global", costs, 1);
  EXPECT_DOUBLE_EQ(delay_only.makespan_s, 7.5);
  EXPECT_DOUBLE_EQ(shared.makespan_s, 7.5);
  EXPECT_DOUBLE_EQ(shared.stages[0].busy_s, 3.25);
  EXPECT_DOUBLE_EQ(shared.stages[1].busy_s, 3.25);
  // When the receiver is busy as the message comes (GPipe, three micro-batches: stage 1
  // computes while later activations arrive), the share is paid on top and the step grows.
  const SimulationResult three_delay = [&] {
    PipelineCosts c = costs;
    c.link.receive_cpu.clear();
    return run("global", c, 3, 1, PipelineKind::gpipe);
  }();
  const SimulationResult three = run("global", costs, 3, 1, PipelineKind::gpipe);
  EXPECT_GT(three.makespan_s, three_delay.makespan_s);
  // A share larger than the transfer leaves nothing in flight: the message is there at
  // once, the receiver spends 1 s on it.
  costs.link.receive_cpu = {{1, 1.0}, {int64_t{1} << 40, 1.0}};
  EXPECT_DOUBLE_EQ(run("global", costs, 1).makespan_s, 1 + 1 + 1 + 2 + 1 + 2);
}

TEST(Simulator, MessagesBetweenNodesTakeTheInterNodeLink) {
  // Three stages, two devices per node: 0 -> 1 within node 0 (0.25 s + 1000 B at 4000 B/s),
  // 1 -> 2 across the network (1 s + 1000 B at 1000 B/s); one micro-batch, global.
  LinkSpec link{.latency_s = 0.25, .bandwidth_bytes_per_s = 4000.0};
  link.devices_per_node = 2;
  link.inter_node_latency_s = 1.0;
  link.inter_node_bandwidth_bytes_per_s = 1000.0;
  const SimulationResult result = run("global", uniform(3, 1.0, 2.0, link), 1);
  const double intra = 0.25 + 0.25, inter = 1.0 + 1.0;
  EXPECT_DOUBLE_EQ(result.makespan_s, 1 + intra + 1 + inter + 1 + 2 + inter + 2 + intra + 2);
  // The same devices on one node: every message over the intra-node link.
  link.devices_per_node = 0;
  EXPECT_DOUBLE_EQ(run("global", uniform(3, 1.0, 2.0, link), 1).makespan_s,
                   1 + intra + 1 + intra + 1 + 2 + intra + 2 + intra + 2);
}

// Data parallelism: a ring all-reduce of B bytes over R replicas takes 2(R-1) steps of a
// 1/R share each, 2(R-1)/R x B / bandwidth + 2(R-1) x latency on one link; the ring of
// device j (job devices j, j + K, ...) takes the inter-node link once it spans nodes.
TEST(Simulator, RingAllReduceIsTheRingFormula) {
  const LinkSpec link{.latency_s = 0.25, .bandwidth_bytes_per_s = 4000.0};
  EXPECT_DOUBLE_EQ(ring_allreduce_s(link, 8000, 1, 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(ring_allreduce_s(link, 0, 4, 0, 1), 0.0);
  for (int r : {2, 3, 4, 8, 64}) {
    const int64_t bytes = int64_t{8000} * r;  // shares of exactly 8000 bytes
    const double formula =
        2.0 * (r - 1) / r * static_cast<double>(bytes) / 4000.0 + 2.0 * (r - 1) * 0.25;
    EXPECT_NEAR(ring_allreduce_s(link, bytes, r, 0, 1), formula, 1e-12) << "R " << r;
    EXPECT_NEAR(ring_allreduce_s(link, bytes, r, 3, 4), formula, 1e-12) << "R " << r;
  }
  LinkSpec nodes = link;
  nodes.devices_per_node = 8;
  nodes.inter_node_latency_s = 1.0;
  nodes.inter_node_bandwidth_bytes_per_s = 1000.0;
  // K = 4: device 1's replicas are job devices 1 and 5 (one node) for R = 2; 1, 5, 9, 13
  // (two nodes) for R = 4, whose ring crosses the network.
  EXPECT_DOUBLE_EQ(ring_allreduce_s(nodes, 8000, 2, 1, 4), 2.0 * (0.25 + 4000.0 / 4000.0));
  EXPECT_DOUBLE_EQ(ring_allreduce_s(nodes, 8000, 4, 1, 4), 6.0 * (1.0 + 2000.0 / 1000.0));
}

// The all-reduce starts when a device reaches its optimiser step (its last backward of the
// mini-batch is done), and the step waits for it; other devices go on meanwhile.
TEST(Simulator, DataParallelAllReduceDelaysTheOptimiserStep) {
  const LinkSpec link{.latency_s = 0.25, .bandwidth_bytes_per_s = 4000.0};
  const auto costs = [&](int k, int replicas, int64_t gradient_bytes) {
    PipelineCosts c = uniform(k, 1.0, 1.0, link);
    for (StageCosts& stage : c.stages) {
      stage.optimizer_s = 1.0;
      stage.gradient_bytes = gradient_bytes;
    }
    c.data_parallel = replicas;
    return c;
  };
  // One stage, M = 2: F F B B S = 5 units; R = 1 is the old step whatever the bytes.
  const SimulationResult alone = run("global", costs(1, 1, 8000), 2, 1, PipelineKind::gpipe);
  EXPECT_DOUBLE_EQ(alone.makespan_s, 5.0);
  EXPECT_DOUBLE_EQ(alone.stages[0].allreduce_s, 0.0);
  for (int r : {2, 4}) {
    const double ring = 2.0 * (r - 1) / r * 8000.0 / 4000.0 + 2.0 * (r - 1) * 0.25;
    const SimulationResult result = run("global", costs(1, r, 8000), 2, 1, PipelineKind::gpipe);
    EXPECT_DOUBLE_EQ(result.makespan_s, 5.0 + ring) << "R " << r;
    EXPECT_DOUBLE_EQ(result.stages[0].allreduce_s, ring) << "R " << r;
    EXPECT_DOUBLE_EQ(result.stages[0].busy_s, 5.0) << "R " << r;  // waiting is idle
    // Two mini-batches back to back: each one's step waits for its own all-reduce.
    const SimulationResult two = run("global", costs(1, r, 8000), 2, 2, PipelineKind::gpipe);
    EXPECT_DOUBLE_EQ(two.makespan_s, 2 * (5.0 + ring)) << "R " << r;
  }
  // K = 2, GPipe, M = 4 at unit costs and free messages: stage 1's step ends at 10, stage
  // 0's at 11 (the grid of docs/strategies.md). A link without latency carries the ring:
  // 2(R-1)/R x G / bandwidth. Equal gradients: stage 0's all-reduce is on the critical
  // path, the step grows by it.
  const auto free_messages = [&](int replicas, int64_t g0, int64_t g1) {
    PipelineCosts c = costs(2, replicas, 0);
    c.link = {.latency_s = 0.0, .bandwidth_bytes_per_s = 4000.0};
    for (StageCosts& stage : c.stages) stage.output_bytes = 0;
    c.stages[0].gradient_bytes = g0;
    c.stages[1].gradient_bytes = g1;
    return run("global", c, 4, 1, PipelineKind::gpipe);
  };
  EXPECT_DOUBLE_EQ(free_messages(1, 8000, 8000).makespan_s, 11.0);
  EXPECT_DOUBLE_EQ(free_messages(2, 8000, 8000).makespan_s, 11.0 + 2.0);
  EXPECT_DOUBLE_EQ(free_messages(4, 8000, 8000).makespan_s, 11.0 + 1.5 * 2.0);
  // Gradients on stage 1 only: its all-reduce overlaps stage 0's last backward and step.
  const SimulationResult overlapped = free_messages(2, 0, 1000);  // 0.25 s: ends at 10.25
  EXPECT_DOUBLE_EQ(overlapped.stages[1].allreduce_s, 0.25);
  EXPECT_DOUBLE_EQ(overlapped.stages[0].allreduce_s, 0.0);
  EXPECT_DOUBLE_EQ(overlapped.makespan_s, 11.0);
  // A longer one comes out from behind: stage 1 ends at 9 + 2 + 1.
  EXPECT_DOUBLE_EQ(free_messages(2, 0, 8000).makespan_s, 12.0);
  PipelineCosts bad = costs(1, 0, 8000);
  EXPECT_THROW(run("global", bad, 1), Error);
}

TEST(Simulator, LocalHasNoBubbleInSteadyState) {
  // Four stages with equal work per micro-batch: aux head 0.5 + 0.5 on stages 0..2, the
  // network's head folded into the last stage's body.
  const int k = 4;
  PipelineCosts costs = uniform(k, 1.0, 2.0);
  for (int j = 0; j + 1 < k; ++j) {
    costs.stages[j].aux_forward_s = 0.5;
    costs.stages[j].aux_backward_s = 0.5;
  }
  costs.stages[k - 1].forward_s = 1.5;
  costs.stages[k - 1].backward_s = 2.5;
  const int mini_batches = 8;
  const SimulationResult local = run("local", costs, 1, mini_batches);
  for (int j = 0; j < k; ++j) {
    EXPECT_DOUBLE_EQ(local.stages[j].internal_idle_s, 0.0) << "stage " << j;
    EXPECT_DOUBLE_EQ(local.stages[j].busy_s, 4.0 * mini_batches);
    EXPECT_DOUBLE_EQ(local.stages[j].first_start_s, static_cast<double>(j));  // fill only
  }
  EXPECT_DOUBLE_EQ(local.makespan_s, 4.0 * mini_batches + (k - 1));
  // Mini-batches complete one per 4 s on every stage once the pipe is full.
  for (int b = 1; b < mini_batches; ++b) {
    EXPECT_DOUBLE_EQ(local.stages[0].step_end_s[b] - local.stages[0].step_end_s[b - 1], 4.0);
  }
  // Global over the same stages waits for the gradient every mini-batch.
  const SimulationResult global = run("global", costs, 1, mini_batches);
  EXPECT_GT(global.stages[0].internal_idle_s, 10.0);
  EXPECT_GT(global.makespan_s, 2.0 * local.makespan_s);
}

TEST(Simulator, ReachDWaitsForExactlyTheGradientsItNeeds) {
  // Uniform stages (forward 1, backward 2, aux 0.5 + 0.5), free link, one micro-batch.
  auto costs_with_last_forward = [](double last_forward_s, double stage2_forward_s) {
    PipelineCosts costs = uniform(4, 1.0, 2.0);
    for (int j = 0; j < 3; ++j) {
      costs.stages[j].aux_forward_s = 0.5;
      costs.stages[j].aux_backward_s = 0.5;
    }
    costs.stages[2].forward_s = stage2_forward_s;
    costs.stages[3].forward_s = last_forward_s;
    return costs;
  };
  auto stage0_done = [&](const std::string& strategy, double last_forward_s,
                         double stage2_forward_s) {
    return run(strategy, costs_with_last_forward(last_forward_s, stage2_forward_s), 1)
        .stages[0]
        .step_end_s.at(0);
  };
  // Pairwise: stage 1 forwards [1, 2], aux [2, 3], passes the gradient through its body
  // [3, 5]; stage 0's backward runs [5, 7]. Stages 2 and 3 do not matter.
  EXPECT_DOUBLE_EQ(stage0_done("pairwise", 1.0, 1.0), 7.0);
  EXPECT_DOUBLE_EQ(stage0_done("pairwise", 50.0, 20.0), 7.0);
  // nwise:3 (reach 2): stage 2 forwards [2, 3], aux [3, 4], passes [4, 6]; stage 1 passes
  // [6, 8]; stage 0 [8, 10]. Stage 3 does not matter, stage 2 does.
  EXPECT_DOUBLE_EQ(stage0_done("nwise:3", 1.0, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(stage0_done("nwise:3", 50.0, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(stage0_done("nwise:3", 1.0, 3.0), 12.0);
  // Global: forwards end at 4, backwards 4..12 through all four stages.
  EXPECT_DOUBLE_EQ(stage0_done("global", 1.0, 1.0), 12.0);
  EXPECT_DOUBLE_EQ(stage0_done("global", 5.0, 1.0), 16.0);
  // Local: stage 0 needs nobody: forward, aux, backward.
  EXPECT_DOUBLE_EQ(stage0_done("local", 50.0, 20.0), 4.0);
}

TEST(Simulator, PassThroughBackwardPassesCostTheInputGradientOnly) {
  // Pairwise on 3 stages, one micro-batch (forward 1, backward 2, aux 0.5 + 0.5): stage 1
  // passes the gradient of stage 1's head through its body to stage 0 without training
  // itself; with the input gradient at 0.5 instead of 2, stage 0's backward starts
  // 1.5 earlier: stage 1 forwards [1, 2], aux [2, 3], passes [3, 3.5]; stage 0 [3.5, 5.5].
  PipelineCosts costs = uniform(3, 1.0, 2.0);
  for (int j = 0; j < 2; ++j) {
    costs.stages[j].aux_forward_s = 0.5;
    costs.stages[j].aux_backward_s = 0.5;
  }
  EXPECT_DOUBLE_EQ(run("pairwise", costs, 1).stages[0].step_end_s.at(0), 7.0);
  const double full_busy_s = run("pairwise", costs, 1).stages[1].busy_s;
  for (StageCosts& stage : costs.stages) stage.backward_input_s = 0.5;
  const SimulationResult cheap = run("pairwise", costs, 1);
  EXPECT_DOUBLE_EQ(cheap.stages[0].step_end_s.at(0), 5.5);
  // Stage 1 runs one pass-through (for stage 1's loss into stage 0) and one training pass.
  EXPECT_DOUBLE_EQ(cheap.stages[1].busy_s, full_busy_s - 1.5);
  // Global passes all train: the input-only cost is never charged.
  EXPECT_DOUBLE_EQ(run("global", costs, 1).makespan_s,
                   run("global", uniform(3, 1.0, 2.0), 1).makespan_s);
}

TEST(Simulator, NwiseKEqualsGlobal) {
  PipelineCosts costs = uniform(4, 1.0, 2.0, {.latency_s = 0.1, .bandwidth_bytes_per_s = 1e4});
  costs.stages[2].forward_s = 3.0;
  for (PipelineKind pipeline : {PipelineKind::gpipe, PipelineKind::one_f_one_b}) {
    const SimulationResult global = run("global", costs, 5, 3, pipeline);
    const SimulationResult nwise = run("nwise:4", costs, 5, 3, pipeline);
    EXPECT_EQ(nwise.makespan_s, global.makespan_s);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(nwise.stages[j].busy_s, global.stages[j].busy_s);
      EXPECT_EQ(nwise.stages[j].step_end_s, global.stages[j].step_end_s);
      EXPECT_EQ(nwise.stages[j].peak_memory_bytes, global.stages[j].peak_memory_bytes);
    }
  }
}

TEST(Simulator, TraceCoversEveryActionInTimeOrderPerStage) {
  const Schedule schedule = build_schedule(
      {.strategy = "pairwise", .stage_count = 3, .micro_batches = 4, .mini_batches = 2});
  const SimulationResult result = simulate(schedule, uniform(3, 1.0, 2.0));
  size_t total = 0;
  for (const auto& actions : schedule.stage_actions) total += actions.size();
  EXPECT_EQ(result.trace.size(), total);
  std::vector<double> last_end(3, 0.0);
  for (const TraceEvent& event : result.trace) {
    EXPECT_GE(event.start_s, last_end[event.stage] - 1e-12);
    EXPECT_GE(event.end_s, event.start_s);
    last_end[event.stage] = event.end_s;
  }
}

TEST(Simulator, DetectsDeadlocksAndBadCosts) {
  Schedule schedule = build_schedule({.strategy = "global", .stage_count = 2, .micro_batches = 1});
  Schedule deadlock = schedule;
  // Stage 1 now waits for an activation that stage 0 never sends.
  deadlock.stage_actions[0].erase(deadlock.stage_actions[0].begin() + 1);
  try {
    simulate(deadlock, uniform(2, 1.0, 1.0));
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::runtime);
    EXPECT_NE(std::string(error.what()).find("stage 1 waits forever at action 0 'recv act<0 0.0'"),
              std::string::npos)
        << error.what();
  }
  Schedule orphan = schedule;
  orphan.stage_actions[0].push_back({.kind = ActionKind::send, .mini_batch = 5, .peer_stage = 1});
  EXPECT_THROW(simulate(orphan, uniform(2, 1.0, 1.0)), Error);
  EXPECT_THROW(simulate(schedule, uniform(3, 1.0, 1.0)), Error);
  PipelineCosts negative = uniform(2, 1.0, 1.0);
  negative.stages[1].backward_s = -1.0;
  EXPECT_THROW(simulate(schedule, negative), Error);
}

// An overlapped pair runs its halves back to back on its device: the step of 1F1B on one
// device (F0 B0 F1 B1) with B0 and F1 made one pair (F0 (F1+B0) B1) takes as long, the
// pair's trace event ends its forward half after the forward's time, and the activations
// of both micro-batches are alive at once inside the pair (the peak).
TEST(Simulator, AnOverlappedPairCostsItsHalvesBackToBack) {
  const PipelineCosts costs = uniform(1, 1.0, 2.0);
  Schedule schedule = build_schedule({.strategy = "global", .stage_count = 1, .micro_batches = 2});
  std::vector<Action>& list = schedule.stage_actions[0];
  ASSERT_EQ(list.size(), 5u);  // fwd 0.0, bwd 0.0, fwd 0.1, bwd 0.1, step
  const SimulationResult apart = simulate(schedule, costs);
  list = {list[0], overlapped(list[2], list[1]), list[3], list[4]};
  const SimulationResult paired = simulate(schedule, costs);
  EXPECT_DOUBLE_EQ(paired.makespan_s, apart.makespan_s);
  const auto event = std::find_if(paired.trace.begin(), paired.trace.end(),
                                  [](const TraceEvent& e) { return e.action_index == 1; });
  ASSERT_NE(event, paired.trace.end());
  EXPECT_DOUBLE_EQ(event->start_s, 1.0);
  EXPECT_DOUBLE_EQ(event->split_s, 2.0);
  EXPECT_DOUBLE_EQ(event->end_s, 4.0);
  EXPECT_EQ(paired.stages[0].peak_memory_bytes, 500 + 2 * 100);
  EXPECT_EQ(apart.stages[0].peak_memory_bytes, 500 + 100);
}

}  // namespace
}  // namespace interplace::placement
