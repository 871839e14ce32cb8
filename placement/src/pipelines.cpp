// The pipeline registry (pipelines.hpp): one row per pipeline, and the one check of a
// choice.
#include "interplace/placement/pipelines.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

// The builders of compute-only lists, one file each under pipelines/.
std::vector<Action> flow_compute_actions(const Schedule& header, int device);
std::vector<Action> interleaved_compute_actions(const Schedule& header, int device);  // also ZB
std::vector<Action> looped_bfs_compute_actions(const Schedule& header, int device);
std::vector<Action> zbv_compute_actions(const Schedule& header, int device);
std::vector<Action> dualpipev_compute_actions(const Schedule& header, int device);

namespace {

int all_micro_batches(int micro_batches, int, int) {
  return micro_batches;
}

// 1F1B's stage s keeps min(M, K - s): stage 0 the most.
int one_per_stage_ahead(int micro_batches, int devices, int) {
  return std::min(micro_batches, std::max(1, devices));
}

// Device 0's warm-up plus one: min(MV, VK) chunk passes of a V-th of the device each.
int interleaved_kept(int micro_batches, int devices, int virtual_stages) {
  const int v = std::max(1, virtual_stages);
  const int64_t chunk_passes = std::min<int64_t>(static_cast<int64_t>(micro_batches) * v,
                                                 static_cast<int64_t>(v) * std::max(1, devices));
  return static_cast<int>((chunk_passes + v - 1) / v);
}

const std::vector<PipelineInfo> kRegistry = {
    {.kind = PipelineKind::gpipe,
     .name = "gpipe",
     .title = "GPipe",
     .other_strategies = OtherStrategies::run_1f1b_instead,
     .network_loss_only = false,
     .takes_virtual_stages = false,
     .fixed_virtual_stages = 0,
     .micro_batches_in_groups_of_devices = false,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::loop,
     .kept_micro_batches = all_micro_batches,
     .compute_actions = flow_compute_actions},
    {.kind = PipelineKind::one_f_one_b,
     .name = "1f1b",
     .title = "1F1B",
     .other_strategies = OtherStrategies::run,
     .network_loss_only = false,
     .takes_virtual_stages = false,
     .fixed_virtual_stages = 0,
     .micro_batches_in_groups_of_devices = false,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::loop,
     .kept_micro_batches = one_per_stage_ahead,
     .compute_actions = flow_compute_actions},
    {.kind = PipelineKind::zb_h1,
     .name = "zb-h1",
     .title = "ZB-H1",
     .other_strategies = OtherStrategies::refused,
     .network_loss_only = true,
     .takes_virtual_stages = false,
     .fixed_virtual_stages = 0,
     .micro_batches_in_groups_of_devices = false,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::loop,
     .kept_micro_batches = one_per_stage_ahead,
     .compute_actions = flow_compute_actions},
    {.kind = PipelineKind::interleaved_1f1b,
     .name = "interleaved-1f1b",
     .title = "Interleaved 1F1B",
     .other_strategies = OtherStrategies::refused,
     .network_loss_only = true,
     .takes_virtual_stages = true,
     .fixed_virtual_stages = 0,
     .micro_batches_in_groups_of_devices = true,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::loop,
     .kept_micro_batches = interleaved_kept,
     .compute_actions = interleaved_compute_actions},
    // Every forward of a chunk before the next chunk's: a device keeps all M micro-batches
    // of every chunk until the backwards start, GPipe's memory.
    {.kind = PipelineKind::looped_bfs,
     .name = "looped-bfs",
     .title = "Looped BFS",
     .other_strategies = OtherStrategies::refused,
     .network_loss_only = true,
     .takes_virtual_stages = true,
     .fixed_virtual_stages = 0,
     .micro_batches_in_groups_of_devices = false,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::loop,
     .kept_micro_batches = all_micro_batches,
     .compute_actions = looped_bfs_compute_actions},
    // Interleaved 1F1B's order and warm-up, each backward split into B and W (ZB1P):
    // device j's W's trail its B's by j, as ZB-H1's do, so it keeps V K chunk passes
    // between F and W as interleaved 1F1B's device 0 between F and B.
    {.kind = PipelineKind::interleaved_zb,
     .name = "interleaved-zb",
     .title = "Interleaved zero bubble",
     .other_strategies = OtherStrategies::refused,
     .network_loss_only = true,
     .takes_virtual_stages = true,
     .fixed_virtual_stages = 0,
     .micro_batches_in_groups_of_devices = true,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::loop,
     .kept_micro_batches = interleaved_kept,
     .compute_actions = interleaved_compute_actions},
    {.kind = PipelineKind::zbv,
     .name = "zbv",
     .title = "ZBV",
     .other_strategies = OtherStrategies::refused,
     .network_loss_only = true,
     .takes_virtual_stages = true,
     .fixed_virtual_stages = 2,
     .micro_batches_in_groups_of_devices = false,
     .micro_batches_at_least_stages = false,
     .stage_map = StageMap::v,
     .kept_micro_batches = nullptr,
     .compute_actions = zbv_compute_actions},
    {.kind = PipelineKind::dualpipev,
     .name = "dualpipev",
     .title = "DualPipeV",
     .other_strategies = OtherStrategies::refused,
     .network_loss_only = true,
     .takes_virtual_stages = true,
     .fixed_virtual_stages = 2,
     .micro_batches_in_groups_of_devices = false,
     .micro_batches_at_least_stages = true,
     .stage_map = StageMap::v,
     .kept_micro_batches = nullptr,
     .compute_actions = dualpipev_compute_actions},
};

std::string joined_names(bool (*keep)(const PipelineInfo&)) {
  std::string out;
  for (const PipelineInfo& info : kRegistry) {
    if (keep(info)) out += (out.empty() ? "" : ", ") + std::string(info.name);
  }
  return out;
}

}  // namespace

const std::vector<PipelineInfo>& pipeline_registry() {
  return kRegistry;
}

const PipelineInfo& pipeline_info(PipelineKind kind) {
  for (const PipelineInfo& info : kRegistry) {
    if (info.kind == kind) return info;
  }
  throw_invalid("unknown pipeline kind " + std::to_string(static_cast<int>(kind)));
}

PipelineKind pipeline_by_name(std::string_view name) {
  for (const PipelineInfo& info : kRegistry) {
    if (name == info.name) return info.kind;
  }
  throw_invalid("unknown pipeline schedule '" + std::string(name) +
                "' (valid: " + joined_names([](const PipelineInfo&) { return true; }) + ")");
}

const std::vector<std::string>& pipeline_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PipelineInfo& info : kRegistry) out.emplace_back(info.name);
    return out;
  }();
  return names;
}

std::string to_string(PipelineKind kind) {
  return pipeline_info(kind).name;
}

int micro_batches_kept(PipelineKind pipeline, int micro_batches, int stages, int virtual_stages) {
  const PipelineInfo& info = pipeline_info(pipeline);
  if (info.kept_micro_batches == nullptr) {
    return kept_in_order(pipeline, micro_batches, stages, virtual_stages);
  }
  return info.kept_micro_batches(micro_batches, stages, virtual_stages);
}

int kept_in_order(PipelineKind pipeline, int micro_batches, int devices, int virtual_stages) {
  const PipelineInfo& info = pipeline_info(pipeline);
  Schedule header;
  header.strategy = "global";
  header.reach = devices - 1;
  header.pipeline = pipeline;
  header.stage_count = devices;
  header.virtual_stages = virtual_stages;
  header.micro_batches = micro_batches;
  header.mini_batches = 1;
  header.stage_map = info.stage_map;
  header.has_aux_head.assign(static_cast<size_t>(devices), false);
  int most = 0;
  for (int device = 0; device < devices; ++device) {
    const std::vector<Action> actions = info.compute_actions(header, device);
    std::map<std::pair<int, int>, size_t> last;  // (micro-batch, chunk) -> its last B or W
    for (size_t i = 0; i < actions.size(); ++i) {
      for (const Action& a : compute_halves(actions[i])) {
        if (a.kind == ActionKind::backward || a.kind == ActionKind::backward_weight) {
          last[{a.micro_batch, a.chunk}] = i;
        }
      }
    }
    int live = 0;
    for (size_t i = 0; i < actions.size(); ++i) {
      for (const Action& a : compute_halves(actions[i])) {
        if (a.kind == ActionKind::forward) most = std::max(most, ++live);
        const auto frees = last.find({a.micro_batch, a.chunk});
        if (a.kind != ActionKind::forward && frees != last.end() && frees->second == i) --live;
      }
    }
  }
  return (most + virtual_stages - 1) / virtual_stages;
}

Action network_loss_backward(const Schedule& header, int device, int chunk, int micro_batch) {
  return {.kind = ActionKind::backward,
          .micro_batch = micro_batch,
          .loss_stage = header.stage_count * header.virtual_stages - 1,
          .updates_parameters = true,
          .propagates_gradient = header.stage_of(device, chunk) > 0,
          .chunk = chunk};
}

int device_of_stage(StageMap map, int stage, int devices) {
  const int chunks = map == StageMap::v ? 2 : kMaxVirtualStages;
  if (devices < 1 || stage < 0 || stage >= devices * chunks) {
    throw_invalid("stage " + std::to_string(stage) + " is outside the pipeline's stages on " +
                  std::to_string(devices) + " devices");
  }
  const int chunk = stage / devices, position = stage % devices;
  return map == StageMap::v && chunk % 2 == 1 ? devices - 1 - position : position;
}

int stage_of_chunk(StageMap map, int device, int chunk, int devices) {
  const int chunks = map == StageMap::v ? 2 : kMaxVirtualStages;
  if (devices < 1 || device < 0 || device >= devices || chunk < 0 || chunk >= chunks) {
    throw_invalid("chunk " + std::to_string(chunk) + " of device " + std::to_string(device) +
                  " is outside the pipeline's stages on " + std::to_string(devices) + " devices");
  }
  const int position = map == StageMap::v && chunk % 2 == 1 ? devices - 1 - device : device;
  return chunk * devices + position;
}

PipelinePlan plan_pipeline(const PipelineChoice& choice) {
  const int k = choice.devices;
  if (k < 1) throw_invalid("devices must be >= 1, got " + std::to_string(k));
  const int v = choice.virtual_stages;
  if (v < 1 || v > kMaxVirtualStages) {
    throw_invalid("virtual_stages must be in 1.." + std::to_string(kMaxVirtualStages) + ", got " +
                  std::to_string(v));
  }
  if (choice.micro_batches < 1 || choice.micro_batches > kMaxMicroBatches) {
    throw_invalid("micro_batches must be in 1.." + std::to_string(kMaxMicroBatches) + ", got " +
                  std::to_string(choice.micro_batches));
  }
  const bool global = choice.reach >= k - 1;
  PipelineKind kind =
      choice.pipeline.value_or(global ? PipelineKind::gpipe : PipelineKind::one_f_one_b);
  const PipelineInfo* info = &pipeline_info(kind);
  if (!global && info->other_strategies == OtherStrategies::refused) {
    throw_invalid("pipeline '" + std::string(info->name) +
                  "' schedules the global strategy only, and '" + choice.strategy + "' on " +
                  std::to_string(k) +
                  " devices is not global (it runs 1F1B's order: pipeline 1f1b). HINT: "
                  "--pipeline 1f1b, or --strategy global (in a spec: pipelines, strategies)");
  }
  if (!global && info->other_strategies == OtherStrategies::run_1f1b_instead) {
    info = &pipeline_info(PipelineKind::one_f_one_b);
  }
  if (info->fixed_virtual_stages > 0 && v != 1 && v != info->fixed_virtual_stages) {
    throw_invalid("pipeline '" + std::string(info->name) + "' runs " +
                  std::to_string(info->fixed_virtual_stages) +
                  " virtual stages per device, its only count, not " + std::to_string(v) +
                  ". HINT: --virtual-stages " + std::to_string(info->fixed_virtual_stages));
  }
  if (v != 1 && !info->takes_virtual_stages) {
    const std::string chunked =
        joined_names([](const PipelineInfo& i) { return i.takes_virtual_stages; });
    throw_invalid("virtual_stages " + std::to_string(v) +
                  " is for the pipelines with virtual stages (" + chunked + "), not '" +
                  info->name + "'. HINT: --pipeline " + chunked.substr(0, chunked.find(',')) +
                  ", or --virtual-stages 1");
  }
  if (v > 1 && info->micro_batches_in_groups_of_devices && choice.micro_batches % k != 0) {
    throw_invalid("pipeline '" + std::string(info->name) + "' with " + std::to_string(v) +
                  " virtual stages needs micro_batches a multiple of the " + std::to_string(k) +
                  " devices, got " + std::to_string(choice.micro_batches) +
                  ". HINT: --micro-batches " + std::to_string(k * (choice.micro_batches / k + 1)));
  }
  const int stages = k * (info->fixed_virtual_stages > 0 ? info->fixed_virtual_stages : v);
  if (info->micro_batches_at_least_stages && choice.micro_batches < stages) {
    throw_invalid("pipeline '" + std::string(info->name) +
                  "' needs at least as many micro-batches " + "as its " + std::to_string(stages) +
                  " stages, got " + std::to_string(choice.micro_batches) +
                  ". HINT: --micro-batches " + std::to_string(stages));
  }
  if (choice.interlock_sum && info->network_loss_only) {
    throw_invalid("pipeline '" + std::string(info->name) +
                  "' runs the network's loss alone (interlock mode single), not sum. HINT: "
                  "--interlock-mode single");
  }
  PipelinePlan plan;
  plan.kind = info->kind;
  plan.stage_map = info->stage_map;
  plan.devices = k;
  plan.virtual_stages = info->fixed_virtual_stages > 0 ? info->fixed_virtual_stages : v;
  if (global) {
    plan.kept_micro_batches =
        micro_batches_kept(info->kind, choice.micro_batches, k, plan.virtual_stages);
  }
  return plan;
}

}  // namespace interplace::placement
