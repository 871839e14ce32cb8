// The MPI runtime on the ranks of MPI_COMM_WORLD (registered per rank count).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "mpi_test_support.hpp"
#include "runtime/messenger.hpp"
#include "runtime/rank_clock.hpp"

namespace interplace::runs {
namespace {

using testing::losses;
using testing::small_gpt;
using testing::small_resnet;
using testing::train_on;
using testing::world_rank;
using testing::world_size;

void expect_same_losses(const TrainResult& a, const TrainResult& b, const std::string& what) {
  testing::expect_losses_near(a, b, 1e-5, 1e-7, what);
}

// The global strategy computes plain backprop whatever the placement and pipeline: a
// P-rank run's losses equal the 1-rank run's, step by step.
void check_global_matches_single(const TrainConfig& base, const std::vector<std::string>& placers) {
  const int p = world_size();
  for (const std::string& placer : placers) {
    for (const char* pipeline : {"gpipe", "1f1b", "zb-h1"}) {
      for (int m : {1, 4}) {
        TrainConfig c = base;
        c.placer = placer;
        c.pipeline = pipeline;
        c.micro_batches = m;
        const std::string what =
            c.model + " " + placer + " " + pipeline + " M=" + std::to_string(m);
        // 1F1B and ZB-H1 need a stage chain: on any other placement planning refuses them.
        TrainConfig probe = c;
        probe.devices = p;
        probe.pipeline = "gpipe";
        const TrainPlan gpipe_plan = plan_config(probe);
        if (c.pipeline != "gpipe" &&
            !placement::is_stage_chain(gpipe_plan.graph, gpipe_plan.placement)) {
          probe.pipeline = c.pipeline;
          EXPECT_THROW(plan_config(probe), Error) << what;
          continue;
        }
        // The reference is the whole backward: one rank under ZB-H1 would split it too.
        TrainConfig reference = c;
        if (c.pipeline == "zb-h1") reference.pipeline = "1f1b";
        const TrainResult single = train_on(reference, 1);
        const TrainResult many = train_on(c, p);
        expect_same_losses(many, single, what + " P=" + std::to_string(p));
        // greedy-eft may keep a small model on one device.
        if (world_rank() == 0 && placer != "greedy-eft") {
          double sent = 0;
          for (const StepRecord& s : many.steps) {
            for (const RankStepRecord& r : s.ranks) sent += static_cast<double>(r.bytes_sent);
          }
          EXPECT_GT(sent, 0.0) << what;  // the ranks really exchanged tensors
        }
      }
    }
  }
}

TEST(Runtime, GlobalMatchesSingleResnet) {
  check_global_matches_single(small_resnet(), {"contiguous", "greedy-eft"});
}
// round-robin: a placement that is no chain at all, with tensors (and the tied LM head's
// weight) crossing ranks both ways.
TEST(Runtime, GlobalMatchesSingleGpt) {
  check_global_matches_single(small_gpt(), {"contiguous", "greedy-eft", "round-robin"});
}

// Interleaved 1F1B, looped BFS, interleaved zero bubble, ZBV and DualPipeV are plain
// backprop too: P ranks running V chunks each of a PV-stage chain (on the loop map the last
// rank's chunk sending on to rank 0's next one, on the v map to its own) give the 1-rank
// run's losses, with M = P and M = 2P micro-batches (looped BFS and ZBV: M = P + 1 too, no
// multiple of P; DualPipeV: M = 2P and 2P + 1, it needs M >= 2P); so does one rank running
// all the chunks.
TEST(Runtime, InterleavedMatchesSingle) {
  const int p = world_size();
  TrainConfig gpt = small_gpt();
  gpt.model_options.layers = 4;  // enough single-tensor cuts for 2P stages
  struct Case {
    TrainConfig base;
    std::string pipeline;
    std::vector<int> chunk_counts;
    std::vector<int> micro_batches;
  };
  const std::vector<Case> cases = {{small_resnet(), "interleaved-1f1b", {2, 3}, {p, 2 * p}},
                                   {gpt, "interleaved-1f1b", {2}, {p, 2 * p}},
                                   {small_resnet(), "looped-bfs", {2}, {p, p + 1}},
                                   {gpt, "looped-bfs", {2}, {p + 1}},
                                   {small_resnet(), "interleaved-zb", {2, 3}, {p, 2 * p}},
                                   {gpt, "interleaved-zb", {2}, {2 * p}},
                                   {small_resnet(), "zbv", {2}, {p + 1, 2 * p}},
                                   {gpt, "zbv", {2}, {p + 1}},
                                   {small_resnet(), "dualpipev", {2}, {2 * p, 2 * p + 1}},
                                   {gpt, "dualpipev", {2}, {2 * p}}};
  for (const Case& chunked : cases) {
    for (int v : chunked.chunk_counts) {
      for (int m : chunked.micro_batches) {
        TrainConfig c = chunked.base;
        c.steps = 6;
        c.micro_batches = m;
        c.batch_size = 2 * m;
        c.pipeline = "1f1b";
        const TrainResult single = train_on(c, 1);
        c.pipeline = chunked.pipeline;
        c.virtual_stages = v;
        const TrainPlan plan = testing::chain_plan(c, p);
        ASSERT_EQ(plan.schedule.virtual_stages, v);
        const std::string what = c.model + " " + chunked.pipeline + " V=" + std::to_string(v) +
                                 " M=" + std::to_string(m) + " P=" + std::to_string(p);
        expect_same_losses(testing::train_plan_on(plan), single, what);
        // One rank running all V chunks: its stage boundaries are messages to itself.
        expect_same_losses(testing::train_plan_on(testing::chain_plan(c, 1)), single,
                           what + " on one rank");
      }
    }
  }
}

TEST(Runtime, NwiseOfAllStagesEqualsGlobal) {
  TrainConfig c = small_resnet();
  c.steps = 8;
  c.micro_batches = 2;
  c.pipeline = "1f1b";
  const int p = world_size();
  const TrainResult global = testing::train_plan_on(testing::chain_plan(c, p));
  c.strategy = "nwise:" + std::to_string(p);
  const TrainResult nwise = testing::train_plan_on(testing::chain_plan(c, p));
  expect_same_losses(nwise, global, "nwise:P vs global");
  // And an interlocking strategy really differs from global (its heads train its bodies).
  c.strategy = "local";
  const TrainResult local = testing::train_plan_on(testing::chain_plan(c, p));
  if (world_rank() == 0) {
    EXPECT_NE(losses(local).back(), losses(global).back());
  }
}

// Pairwise and nwise with and without the sum mode all run to the end on a chain, with
// finite losses on every stage that has a head.
TEST(Runtime, InterlockingStrategiesRun) {
  const int p = world_size();
  for (const char* strategy : {"pairwise", "nwise:2", "nwise:3"}) {
    for (const char* mode : {"single", "sum"}) {
      TrainConfig c = small_gpt();
      c.steps = 3;
      c.micro_batches = 2;
      c.strategy = strategy;
      c.interlock_mode = mode;
      // sum mode is for reaches short of global (nwise:3 on 2 stages is global).
      if (std::string(mode) == "sum" && placement::strategy_reach(strategy, p) == p - 1) continue;
      const TrainPlan plan = testing::chain_plan(c, p);
      const TrainResult r = testing::train_plan_on(plan);
      if (world_rank() != 0) continue;
      const std::string what = std::string(strategy) + "/" + mode;
      EXPECT_TRUE(std::isfinite(r.steps.back().loss)) << what;
      const placement::Schedule schedule =
          placement::build_schedule({.strategy = strategy,
                                     .stage_count = p,
                                     .micro_batches = 2,
                                     .interlock = placement::interlock_mode_by_name(mode)});
      for (int k = 0; k < p; ++k) {
        EXPECT_EQ(std::isfinite(r.steps.back().aux_loss[static_cast<size_t>(k)]),
                  static_cast<bool>(schedule.has_aux_head[static_cast<size_t>(k)]))
            << what << " stage " << k;
      }
    }
  }
}

// Local learning: no gradient crosses a boundary, so the last stage sends nothing and
// the others send only their activations; every stage but the last reports an aux loss.
TEST(Runtime, LocalSendsNoBackwardMessages) {
  TrainConfig c = small_resnet();
  c.steps = 4;
  c.micro_batches = 2;
  c.strategy = "local";
  const int p = world_size();
  const TrainPlan plan = testing::chain_plan(c, p);
  ASSERT_EQ(plan.global_only_reason, "");
  const TrainResult r = testing::train_plan_on(plan);
  if (world_rank() != 0) return;
  for (const StepRecord& s : r.steps) {
    EXPECT_EQ(s.ranks.back().bytes_sent, 0);
    for (int k = 0; k + 1 < p; ++k) {
      EXPECT_GT(s.ranks[static_cast<size_t>(k)].bytes_sent, 0);
      EXPECT_TRUE(std::isfinite(s.aux_loss[static_cast<size_t>(k)])) << "stage " << k;
    }
    EXPECT_TRUE(std::isnan(s.aux_loss.back()));
    EXPECT_TRUE(std::isfinite(s.loss));
  }
}

TEST(Runtime, ErrorOnOneRankStopsAll) {
  TrainConfig c = small_resnet();
  c.steps = 50;
  const int p = world_size();
  setenv("INTERPLACE_FAIL_AT", (std::to_string(p - 1) + ":2").c_str(), 1);
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    train_on(c, p);
  } catch (const Error& e) {
    message = e.what();
  }
  unsetenv("INTERPLACE_FAIL_AT");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(message.find("injected failure on rank " + std::to_string(p - 1)), std::string::npos)
      << message;
  EXPECT_LT(seconds, 20.0);
  // Nothing leaked: the next configuration on the same ranks trains normally.
  c.steps = 2;
  const TrainResult after = train_on(c, p);
  if (world_rank() == 0) {
    EXPECT_TRUE(std::isfinite(after.steps.back().loss));
  }
}

TEST(Runtime, RecordsAreComplete) {
  TrainConfig c = small_resnet();
  c.warmup_steps = 1;
  c.steps = 2;
  c.micro_batches = 2;
  c.eval_samples = 8;
  const int p = world_size();
  const TrainResult r = train_on(c, p);
  if (world_rank() != 0) return;
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_TRUE(r.steps[0].warmup);
  EXPECT_FALSE(r.steps[1].warmup);
  ASSERT_EQ(r.steps[1].ranks.size(), static_cast<size_t>(p));
  for (const RankStepRecord& rec : r.steps[1].ranks) {
    EXPECT_GT(rec.step_s, 0.0);
    EXPECT_GT(rec.forward_s, 0.0);
    EXPECT_GT(rec.backward_s, 0.0);
    EXPECT_NEAR(rec.idle_s,
                rec.step_s - rec.forward_s - rec.backward_s - rec.aux_s - rec.optimizer_s, 1e-9);
    EXPECT_GT(rec.peak_memory_bytes, 0);
  }
  EXPECT_GT(r.measured_wall_s, 0.0);
  EXPECT_GT(r.samples_per_s, 0.0);
  EXPECT_EQ(r.eval_samples, 8);
  EXPECT_TRUE(std::isfinite(r.eval_loss));
  EXPECT_GE(r.eval_accuracy, 0.0);
  EXPECT_EQ(r.hosts.size(), static_cast<size_t>(p));
  EXPECT_FALSE(r.timeline.empty());
  // CPU time beside the wall time: the main thread cannot use more CPU than wall time
  // (but for the microseconds between reading the two clocks), and the units' CPU times
  // are part of the step's.
  constexpr double kSlackS = 1e-3;
  for (const StepRecord& s : r.steps) {
    for (const RankStepRecord& rec : s.ranks) {
      EXPECT_GT(rec.forward_cpu_s, 0.0);
      EXPECT_GT(rec.backward_cpu_s, 0.0);
      EXPECT_LE(rec.forward_cpu_s, rec.forward_s + kSlackS);
      EXPECT_LE(rec.backward_cpu_s, rec.backward_s + kSlackS);
      EXPECT_LE(rec.aux_cpu_s, rec.aux_s + kSlackS);
      EXPECT_LE(rec.optimizer_cpu_s, rec.optimizer_s + kSlackS);
      EXPECT_LE(rec.step_cpu_s, rec.step_s + kSlackS);
      EXPECT_LE(rec.forward_cpu_s + rec.backward_cpu_s + rec.aux_cpu_s + rec.optimizer_cpu_s,
                rec.step_cpu_s + kSlackS);
    }
  }
  for (const placement::TimelineEvent& e : r.timeline) {
    ASSERT_TRUE(std::isfinite(e.cpu_s)) << e.kind << " on rank " << e.rank;
    EXPECT_GE(e.cpu_s, 0.0);
    EXPECT_LE(e.cpu_s, e.end_s - e.start_s + kSlackS) << e.kind << " on rank " << e.rank;
  }
}

// A rank whose unit only waits for a message (as the last stage waits during the
// pipeline's fill) accrues ~0 CPU time in the unit: the Messenger's polling, which spins
// for the first 10 ms, is the wait's, not the unit's.
TEST(Runtime, UnitCpuTimeExcludesWaits) {
  Messenger msg(MPI_COMM_WORLD);
  RankClock clock;
  clock.record_events = true;
  msg.on_wait = [&clock](const Instant& start, const Instant& end) { clock.waited(start, end); };
  const int rank = msg.rank(), last = msg.size() - 1;
  constexpr double kSenderDelayS = 0.2;
  if (rank == 0) {
    const Instant start = now();
    clock.step_start_s = start.wall_s;
    clock.begin("forward", start);
    const kernels::Tensor t = msg.receive({4}, last, 7);
    clock.end(now());
    EXPECT_EQ(t.numel(), 4);
    EXPECT_LT(clock.forward_cpu_s, 0.005);
    EXPECT_LT(clock.forward_s, 0.05);  // the wall time went to the wait too
    double waited = 0.0, wait_cpu = 0.0;
    for (const placement::TimelineEvent& e : clock.events) {
      if (e.kind != "comm_wait") continue;
      waited += e.end_s - e.start_s;
      wait_cpu += e.cpu_s;
    }
    EXPECT_GE(waited, kSenderDelayS * 0.9);
    EXPECT_LE(wait_cpu, waited + 1e-3);
  } else if (rank == last) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kSenderDelayS));
    msg.send(kernels::Tensor::full({4}, 1.0f), 0, 7);
    msg.complete_sends();
  }
  msg.barrier();
}

// Steps handed on while training are the records gathered after it, in order, on rank 0.
TEST(Runtime, StreamedStepsEqualTheGatheredRecords) {
  TrainConfig c = small_gpt();
  c.warmup_steps = 1;
  c.steps = 4;
  c.micro_batches = 2;
  c.devices = world_size();
  std::vector<StepRecord> streamed;
  const TrainResult r = train(plan_config(c), MPI_COMM_WORLD,
                              [&streamed](const StepRecord& s) { streamed.push_back(s); });
  if (world_rank() != 0) {
    EXPECT_TRUE(streamed.empty());
    return;
  }
  ASSERT_EQ(streamed.size(), r.steps.size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    const StepRecord &a = streamed[i], &b = r.steps[i];
    EXPECT_EQ(a.step, static_cast<int>(i));
    EXPECT_EQ(a.warmup, b.warmup);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.step_time_s, b.step_time_s);
    ASSERT_EQ(a.ranks.size(), b.ranks.size());
    for (size_t k = 0; k < a.ranks.size(); ++k) {
      EXPECT_EQ(a.ranks[k].forward_s, b.ranks[k].forward_s);
      EXPECT_EQ(a.ranks[k].bytes_sent, b.ranks[k].bytes_sent);
      // The CPU times travel in the same row (kStepFields) both ways.
      EXPECT_EQ(a.ranks[k].step_cpu_s, b.ranks[k].step_cpu_s);
      EXPECT_EQ(a.ranks[k].backward_cpu_s, b.ranks[k].backward_cpu_s);
      EXPECT_EQ(a.ranks[k].optimizer_cpu_s, b.ranks[k].optimizer_cpu_s);
      EXPECT_GT(b.ranks[k].backward_cpu_s, 0.0);
    }
  }
}

// Data parallelism: R replicas of a K-stage pipeline, each on its slice of the global
// mini-batch, with every stage's gradients averaged over its replicas, train the network
// one replica trains on the whole batch: the same losses step by step (mean over the
// global batch), for GPT (no batch statistics, no dropout). K x R = the world: K = 1,
// R = P and K = 2, R = P / 2; every global schedule and an interlocking strategy.
TEST(Runtime, DataParallelMatchesOneReplica) {
  const int p = world_size();
  for (int k : {1, 2}) {
    if (p % k != 0 || p / k < 2) continue;
    const int r = p / k;
    for (const char* strategy : {"global/gpipe", "global/1f1b", "global/zb-h1", "local"}) {
      if (k == 1 && std::string(strategy) == "local") continue;  // K = 1: global
      TrainConfig c = small_gpt();
      // Momentum SGD: unlike AdamW, its step scales with the gradient, so summed instead of
      // averaged gradients show (AdamW normalises the scale away).
      c.optimizer = placement::OptimizerKind::sgd_momentum;
      c.learning_rate = 0.05;
      c.steps = 6;
      c.batch_size = 4 * r;  // each replica: 4 samples in 2 micro-batches
      c.micro_batches = 2;
      const std::string name(strategy);
      c.strategy = name.substr(0, name.find('/'));
      c.pipeline = name.find('/') == std::string::npos ? "1f1b" : name.substr(name.find('/') + 1);
      // The reference: one replica of the same K stages on the whole global batch, in the
      // same M micro-batches (R times as large).
      const TrainResult one = testing::train_plan_on(testing::chain_plan(c, k));
      c.data_parallel = r;
      const TrainPlan plan = testing::chain_plan(c, k);
      ASSERT_EQ(plan.graph.batch_size(), 2);
      const TrainResult replicated = testing::train_plan_on(plan);
      const std::string what = name + " K=" + std::to_string(k) + " R=" + std::to_string(r);
      expect_same_losses(replicated, one, what);
      if (world_rank() == 0) {
        // Every rank of every replica recorded its steps.
        ASSERT_EQ(replicated.steps.front().ranks.size(), static_cast<size_t>(p)) << what;
        ASSERT_EQ(replicated.hosts.size(), static_cast<size_t>(p)) << what;
      }
    }
  }
}

// Batch norm normalises by the statistics of its micro-batch: R replicas of M micro-
// batches then differ from one replica of M R times as large (docs/strategies.md says so),
// and equal one replica of R M micro-batches of the replicas' size, whose statistics are
// over the same rows (running statistics, used in evaluation only, still differ).
TEST(Runtime, DataParallelBatchNormIsPerReplicaMicroBatch) {
  const int p = world_size();
  TrainConfig c = small_resnet();
  c.steps = 4;
  c.batch_size = 4 * p;
  c.micro_batches = 1;
  const TrainResult whole = testing::train_plan_on(testing::chain_plan(c, 1));
  TrainConfig same_rows = c;
  same_rows.micro_batches = p;
  const TrainResult split = testing::train_plan_on(testing::chain_plan(same_rows, 1));
  c.data_parallel = p;
  const TrainResult replicated = testing::train_plan_on(testing::chain_plan(c, 1));
  expect_same_losses(replicated, split, "resnet R=P vs 1 replica of P micro-batches");
  if (world_rank() == 0) {
    ASSERT_EQ(losses(whole).size(), losses(replicated).size());
    EXPECT_GT(std::abs(losses(replicated).front() - losses(whole).front()), 1e-4)
        << "batch statistics over B / R rows, not B";
  }
}

// train(plan) on the whole world refuses the plan as bad input, naming `fragment`.
void expect_world_refuses(const TrainPlan& plan, const std::string& fragment) {
  try {
    train(plan, MPI_COMM_WORLD);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Runtime, DataParallelNeedsDevicesTimesReplicasRanks) {
  TrainConfig c = small_gpt();
  c.data_parallel = 2;
  c.devices = world_size();  // needs twice the world
  expect_world_refuses(plan_config(c), "x 2 replicas");
}

TEST(Runtime, DevicesMustMatchTheCommunicator) {
  TrainConfig c = small_resnet();
  c.devices = world_size() + 1;
  expect_world_refuses(plan_config(c), "the communicator has");
}

}  // namespace
}  // namespace interplace::runs
