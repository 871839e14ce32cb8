// The pipeline registry (pipelines.hpp): its rows, the one check of a choice, the stage
// maps, and build_schedule's one pass of messages over the builders' compute-only lists.
#include <gtest/gtest.h>

#include "pytorch_orders.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {
namespace {

bool is_message(const Action& a) {
  return a.kind == ActionKind::send || a.kind == ActionKind::receive;
}

std::string error_of(const PipelineChoice& choice) {
  try {
    plan_pipeline(choice);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    return error.what();
  }
  return "";
}

TEST(Pipelines, TheRegistryNamesEveryPipelineOnce) {
  EXPECT_EQ(pipeline_names(),
            (std::vector<std::string>{"gpipe", "1f1b", "zb-h1", "interleaved-1f1b", "looped-bfs",
                                      "interleaved-zb", "zbv", "dualpipev"}));
  for (const PipelineInfo& info : pipeline_registry()) {
    EXPECT_EQ(pipeline_by_name(info.name), info.kind);
    EXPECT_EQ(&pipeline_info(info.kind), &info);
    EXPECT_EQ(to_string(info.kind), info.name);
  }
  try {
    pipeline_by_name("dualpipe");
    ADD_FAILURE();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("gpipe, 1f1b, zb-h1, interleaved-1f1b, looped-bfs, interleaved-zb, zbv, "
                        "dualpipev"),
              std::string::npos)
        << error.what();
  }
}

// The memory rule of each row: GPipe keeps all M, 1F1B and ZB-H1 at most K, interleaved
// 1F1B min(M, K) of a whole device's activations (rounded up).
TEST(Pipelines, KeptMicroBatchesFollowEachRowsRule) {
  EXPECT_EQ(micro_batches_kept(PipelineKind::gpipe, 8, 4), 8);
  EXPECT_EQ(micro_batches_kept(PipelineKind::one_f_one_b, 8, 4), 4);
  EXPECT_EQ(micro_batches_kept(PipelineKind::one_f_one_b, 2, 4), 2);
  EXPECT_EQ(micro_batches_kept(PipelineKind::zb_h1, 8, 4), 4);
  EXPECT_EQ(micro_batches_kept(PipelineKind::interleaved_1f1b, 8, 4, 2), 4);
  EXPECT_EQ(micro_batches_kept(PipelineKind::interleaved_1f1b, 3, 4, 3), 3);
}

TEST(Pipelines, StageMapsLoopAndV) {
  std::vector<int> loop, v;
  for (int s = 0; s < 8; ++s) {
    loop.push_back(device_of_stage(StageMap::loop, s, 4));
    v.push_back(device_of_stage(StageMap::v, s, 4));
  }
  EXPECT_EQ(loop, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(v, (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  for (const StageMap map : {StageMap::loop, StageMap::v}) {
    for (int device = 0; device < 4; ++device) {
      for (int chunk = 0; chunk < 2; ++chunk) {
        const int stage = stage_of_chunk(map, device, chunk, 4);
        EXPECT_EQ(device_of_stage(map, stage, 4), device);
        EXPECT_EQ(stage / 4, chunk);
      }
    }
  }
  EXPECT_THROW(device_of_stage(StageMap::v, 8, 4), Error);  // V = 2 alone
  EXPECT_THROW(stage_of_chunk(StageMap::loop, 4, 0, 4), Error);
  EXPECT_THROW(device_of_stage(StageMap::loop, -1, 4), Error);
}

// One error text per rule, each with a HINT; a local strategy's gpipe is 1f1b.
TEST(Pipelines, PlanPipelineChecksEachRuleOnce) {
  const PipelineChoice global{.pipeline = PipelineKind::interleaved_1f1b,
                              .reach = 3,
                              .strategy = "global",
                              .devices = 4,
                              .virtual_stages = 2,
                              .micro_batches = 8};
  const PipelinePlan plan = plan_pipeline(global);
  EXPECT_EQ(plan.kind, PipelineKind::interleaved_1f1b);
  EXPECT_EQ(plan.stages(), 8);
  EXPECT_EQ(plan.kept_micro_batches, 4);
  EXPECT_EQ(plan.stage_map, StageMap::loop);

  PipelineChoice local = global;
  local.reach = 0;
  local.strategy = "local";
  EXPECT_NE(error_of(local).find("pipeline 'interleaved-1f1b' schedules the global strategy "
                                 "only, and 'local' on 4 devices is not global"),
            std::string::npos);
  EXPECT_NE(error_of(local).find("HINT: --pipeline 1f1b"), std::string::npos);
  local.pipeline = PipelineKind::gpipe;
  local.virtual_stages = 1;
  EXPECT_EQ(plan_pipeline(local).kind, PipelineKind::one_f_one_b);
  EXPECT_EQ(plan_pipeline(local).kept_micro_batches, 0);  // the placers count flows
  local.pipeline.reset();
  EXPECT_EQ(plan_pipeline(local).kind, PipelineKind::one_f_one_b);
  PipelineChoice unset = global;
  unset.pipeline.reset();
  unset.virtual_stages = 1;
  EXPECT_EQ(plan_pipeline(unset).kind, PipelineKind::gpipe);
  EXPECT_EQ(plan_pipeline(unset).kept_micro_batches, 8);

  PipelineChoice bad = global;
  bad.pipeline = PipelineKind::zb_h1;
  EXPECT_NE(error_of(bad).find(
                "virtual_stages 2 is for the pipelines with virtual stages "
                "(interleaved-1f1b, looped-bfs, interleaved-zb, zbv, dualpipev), not 'zb-h1'. "
                "HINT:"),
            std::string::npos);
  bad = global;
  bad.micro_batches = 6;
  EXPECT_NE(error_of(bad).find("needs micro_batches a multiple of the 4 devices, got 6. HINT: "
                               "--micro-batches 8"),
            std::string::npos);
  bad = global;
  bad.interlock_sum = true;
  EXPECT_NE(error_of(bad).find("interlock mode single"), std::string::npos);
  bad = global;
  bad.virtual_stages = kMaxVirtualStages + 1;
  EXPECT_NE(error_of(bad).find("virtual_stages must be in 1.."), std::string::npos);
  bad = global;
  bad.micro_batches = 0;
  EXPECT_NE(error_of(bad).find("micro_batches must be in 1.."), std::string::npos);
  bad = global;
  bad.devices = 0;
  EXPECT_NE(error_of(bad).find("devices must be >= 1"), std::string::npos);
}

// The builders emit compute actions only; build_schedule's one pass adds the messages:
// with them stripped, every list is the builder's, repeated per mini-batch with a step;
// and every send has its receive, of the same key, on the device of its peer stage.
TEST(Pipelines, OnePassAddsEveryMessageToTheBuildersComputeLists) {
  struct Case {
    std::string strategy;
    PipelineKind pipeline;
    int virtual_stages;
    InterlockMode interlock;
  };
  const std::vector<Case> cases = {
      {"global", PipelineKind::gpipe, 1, InterlockMode::single},
      {"global", PipelineKind::one_f_one_b, 1, InterlockMode::single},
      {"global", PipelineKind::zb_h1, 1, InterlockMode::single},
      {"global", PipelineKind::interleaved_1f1b, 2, InterlockMode::single},
      {"global", PipelineKind::interleaved_1f1b, 3, InterlockMode::single},
      {"global", PipelineKind::looped_bfs, 2, InterlockMode::single},
      {"global", PipelineKind::looped_bfs, 3, InterlockMode::single},
      {"global", PipelineKind::interleaved_zb, 2, InterlockMode::single},
      {"global", PipelineKind::interleaved_zb, 3, InterlockMode::single},
      {"global", PipelineKind::zbv, 2, InterlockMode::single},
      {"global", PipelineKind::dualpipev, 2, InterlockMode::single},
      {"local", PipelineKind::one_f_one_b, 1, InterlockMode::single},
      {"pairwise", PipelineKind::one_f_one_b, 1, InterlockMode::single},
      {"pairwise", PipelineKind::one_f_one_b, 1, InterlockMode::sum},
      {"nwise:3", PipelineKind::one_f_one_b, 1, InterlockMode::single},
  };
  for (const Case& c : cases) {
    for (int k : {1, 2, 3, 4}) {
      for (int m : {4, 8}) {
        if (pipeline_info(c.pipeline).micro_batches_in_groups_of_devices && m % k != 0) continue;
        if (pipeline_info(c.pipeline).micro_batches_at_least_stages && m < 2 * k) continue;
        const Schedule schedule = build_schedule({.strategy = c.strategy,
                                                  .pipeline = c.pipeline,
                                                  .stage_count = k,
                                                  .virtual_stages = c.virtual_stages,
                                                  .micro_batches = m,
                                                  .mini_batches = 2,
                                                  .interlock = c.interlock});
        const std::string what = c.strategy + "/" + to_string(c.pipeline) + " K " +
                                 std::to_string(k) + " M " + std::to_string(m);
        // (kind, payload, mini, micro, chunk-free key: from stage, to stage, loss) -> count
        std::map<std::tuple<int, int, int, int, int, int>, int> sends, receives;
        for (int j = 0; j < k; ++j) {
          const std::vector<Action> compute =
              pipeline_info(schedule.pipeline).compute_actions(schedule, j);
          std::vector<Action> expected;
          for (int b = 0; b < 2; ++b) {
            for (Action a : compute) {
              EXPECT_FALSE(is_message(a) || a.kind == ActionKind::optimizer_step) << what;
              a.mini_batch = b;
              expected.push_back(a);
            }
            expected.push_back({.kind = ActionKind::optimizer_step, .mini_batch = b});
          }
          std::vector<Action> stripped;
          for (const Action& a : schedule.stage_actions[static_cast<size_t>(j)]) {
            if (!is_message(a)) {
              stripped.push_back(a);
              continue;
            }
            // One device of V chunks passes its tensors to itself, and so does the v map's
            // device K-1 from stage K-1 to K; every other message leaves the device.
            const int here = schedule.stage_of(j, a.chunk);
            const bool turn = schedule.stage_map == StageMap::v &&
                              std::min(here, a.peer_stage) == k - 1 &&
                              std::max(here, a.peer_stage) == k;
            if (k > 1 && !turn) {
              EXPECT_NE(schedule.device_of_stage(a.peer_stage), j) << what;
            }
            const bool send = a.kind == ActionKind::send;
            const auto key = std::make_tuple(static_cast<int>(a.payload), a.mini_batch,
                                             a.micro_batch, send ? here : a.peer_stage,
                                             send ? a.peer_stage : here, a.loss_stage);
            ++(send ? sends : receives)[key];
          }
          EXPECT_EQ(stripped, expected) << what << " device " << j;
        }
        EXPECT_EQ(sends, receives) << what;
      }
    }
  }
}

// Looped BFS against PyTorch's order: torch.distributed.pipelining's
// ScheduleLoopedBFS._calculate_single_rank_operations (pytorch/pytorch, schedules.py at
// commit 00722e648b74) gives rank r, for its stages r, r + K, .. in turn, the forwards of
// micro-batches 0..M-1, then for its stages in reverse the full backwards of micro-batches
// M-1..0 (its no-op padding aside). Both written in PyTorch's action notation
// ("2F0": stage 2's forward of micro-batch 0, "0B3" a full backward).
// PyTorch's notation of a compute action: "3F0" stage 3's forward of micro-batch 0, "3B0"
// a full backward, "3I0" a backward of the input gradient alone (defers_parameters), "3W0"
// the weight pass; messages and the optimiser step are left out.
std::string torch_notation(const Action& a, const Schedule& schedule, int rank) {
  if (a.kind == ActionKind::forward_backward) {  // PyTorch's OVERLAP_F_B: "(0F3;3B1)"
    return "(" + torch_notation(forward_half(a), schedule, rank) + ";" +
           torch_notation(backward_half(a), schedule, rank) + ")";
  }
  char type = 0;
  if (a.kind == ActionKind::forward) type = 'F';
  if (a.kind == ActionKind::backward) type = a.defers_parameters ? 'I' : 'B';
  if (a.kind == ActionKind::backward_weight) type = 'W';
  if (type == 0) return "";
  return std::to_string(schedule.stage_of(rank, a.chunk)) + type + std::to_string(a.micro_batch);
}

std::string torch_notation(const std::vector<Action>& actions, const Schedule& schedule, int rank) {
  std::string out;
  for (const Action& a : actions) {
    const std::string text = torch_notation(a, schedule, rank);
    if (text.empty()) continue;
    if (!out.empty()) out += ' ';
    out += text;
  }
  return out;
}

using testing::pytorch_orders;

// Every rank's compute order of `pipeline` against PyTorch's `name` for K in {2, 4},
// M in {4, 8} and the chunk counts listed; returns how many were compared.
int expect_pytorch_orders(PipelineKind pipeline, const std::string& name,
                          const std::vector<int>& virtual_stages) {
  const std::map<std::string, std::string> orders = pytorch_orders();
  int compared = 0;
  for (int k : {2, 4}) {
    for (int m : {4, 8}) {
      for (int v : virtual_stages) {
        const std::string key = name + " K" + std::to_string(k) + " M" + std::to_string(m) + " V" +
                                std::to_string(v) + " rank";
        if (!orders.contains(key + "0")) continue;  // a count PyTorch refuses
        const Schedule schedule = build_schedule({.strategy = "global",
                                                  .pipeline = pipeline,
                                                  .stage_count = k,
                                                  .virtual_stages = v,
                                                  .micro_batches = m});
        for (int r = 0; r < k; ++r) {
          EXPECT_EQ(torch_notation(schedule.stage_actions[static_cast<size_t>(r)], schedule, r),
                    orders.at(key + std::to_string(r)))
              << key << r;
          ++compared;
        }
      }
    }
  }
  return compared;
}

std::string pytorch_looped_bfs(int rank, int k, int v, int m) {
  std::string out;
  const auto add = [&](int stage, char type, int mb) {
    if (!out.empty()) out += ' ';
    out += std::to_string(stage);
    out += type;
    out += std::to_string(mb);
  };
  for (int stage = rank; stage < k * v; stage += k) {
    for (int mb = 0; mb < m; ++mb) add(stage, 'F', mb);
  }
  for (int stage = rank + (v - 1) * k; stage >= 0; stage -= k) {
    for (int mb = m - 1; mb >= 0; --mb) add(stage, 'B', mb);
  }
  return out;
}

TEST(Pipelines, LoopedBfsRunsPyTorchsOrder) {
  const Schedule small = build_schedule({.strategy = "global",
                                         .pipeline = PipelineKind::looped_bfs,
                                         .stage_count = 2,
                                         .virtual_stages = 2,
                                         .micro_batches = 4});
  EXPECT_EQ(torch_notation(small.stage_actions[0], small, 0),
            "0F0 0F1 0F2 0F3 2F0 2F1 2F2 2F3 2B3 2B2 2B1 2B0 0B3 0B2 0B1 0B0");
  for (int k : {2, 4}) {
    for (int m : {4, 8}) {
      for (int v : {2, 3}) {
        const Schedule schedule = build_schedule({.strategy = "global",
                                                  .pipeline = PipelineKind::looped_bfs,
                                                  .stage_count = k,
                                                  .virtual_stages = v,
                                                  .micro_batches = m});
        for (int r = 0; r < k; ++r) {
          EXPECT_EQ(torch_notation(schedule.stage_actions[static_cast<size_t>(r)], schedule, r),
                    pytorch_looped_bfs(r, k, v, m))
              << "K " << k << " V " << v << " M " << m << " rank " << r;
        }
      }
    }
  }
  // Any M (no groups of K), every forward kept until the backwards (GPipe's memory).
  PipelineChoice odd{.pipeline = PipelineKind::looped_bfs,
                     .reach = 3,
                     .strategy = "global",
                     .devices = 4,
                     .virtual_stages = 2,
                     .micro_batches = 5};
  EXPECT_EQ(plan_pipeline(odd).kept_micro_batches, 5);
  odd.reach = 0;
  odd.strategy = "local";
  EXPECT_NE(error_of(odd).find("schedules the global strategy only"), std::string::npos);
}

}  // namespace
}  // namespace interplace::placement

namespace interplace::placement {
namespace {

// Interleaved zero bubble (ZB1P) and ZBV against PyTorch's own orders: their
// _calculate_single_rank_operations in torch 2.15.0 (git d0f2af8b66b2), run by
// data/pytorch_schedule_orders.py into data/pytorch-schedule-orders.txt.
TEST(Pipelines, InterleavedZeroBubbleRunsPyTorchsOrder) {
  EXPECT_EQ(expect_pytorch_orders(PipelineKind::interleaved_zb, "InterleavedZeroBubble", {2, 3}),
            2 * (2 + 2 + 4 + 4));
}

TEST(Pipelines, ZbvRunsPyTorchsOrder) {
  EXPECT_EQ(expect_pytorch_orders(PipelineKind::zbv, "ZBVZeroBubble", {2}), 2 + 2 + 4 + 4);
  // Its one count of chunks: V = 1 (the default) runs 2, another is refused.
  PipelineChoice choice{.pipeline = PipelineKind::zbv,
                        .reach = 3,
                        .strategy = "global",
                        .devices = 4,
                        .virtual_stages = 1,
                        .micro_batches = 8};
  EXPECT_EQ(plan_pipeline(choice).virtual_stages, 2);
  EXPECT_EQ(plan_pipeline(choice).stage_map, StageMap::v);
  choice.virtual_stages = 3;
  EXPECT_NE(error_of(choice).find("HINT: --virtual-stages 2"), std::string::npos);
}

// DualPipeV against PyTorch's ScheduleDualPipeV (the same torch 2.15.0 file): K 2 with M 4
// and 8, K 4 with M 8 (M 4 < 2K is refused by both).
TEST(Pipelines, DualPipeVRunsPyTorchsOrder) {
  EXPECT_EQ(expect_pytorch_orders(PipelineKind::dualpipev, "DualPipeV", {2}), 2 + 2 + 4);
  PipelineChoice few{.pipeline = PipelineKind::dualpipev,
                     .reach = 3,
                     .strategy = "global",
                     .devices = 4,
                     .micro_batches = 7};
  EXPECT_NE(error_of(few).find("needs at least as many micro-batches as its 8 stages, got 7. "
                               "HINT: --micro-batches 8"),
            std::string::npos)
      << error_of(few);
  few.micro_batches = 8;
  EXPECT_EQ(plan_pipeline(few).virtual_stages, 2);
}

// The rows with a memory rule of their own keep what their compute order keeps.
TEST(Pipelines, EveryMemoryRuleIsWhatItsOrderKeeps) {
  for (const PipelineInfo& info : pipeline_registry()) {
    for (int k : {1, 2, 3, 4}) {
      for (int m : {1, 2, 4, 5, 8}) {
        for (int v : {1, 2, 3}) {
          if (info.fixed_virtual_stages > 0 && v != info.fixed_virtual_stages) continue;
          if (v > 1 && !info.takes_virtual_stages) continue;
          if (v > 1 && info.micro_batches_in_groups_of_devices && m % k != 0) continue;
          if (info.micro_batches_at_least_stages && m < k * v) continue;
          EXPECT_EQ(micro_batches_kept(info.kind, m, k, v), kept_in_order(info.kind, m, k, v))
              << info.name << " K " << k << " M " << m << " V " << v;
        }
      }
    }
  }
}

}  // namespace
}  // namespace interplace::placement
