// interplace place: runs a placer on a model and reports the placement per device.
#include <memory>

#include "commands.hpp"
#include "device_options.hpp"
#include "interplace/placement/placement_file.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/torch_plan.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"
#include "placement_report.hpp"

namespace interplace::runs::cli {
namespace {

struct PlaceOptions {
  ModelSelection model;
  DeviceSelection device;
  PlacementSelection placement;
  std::string format;
  std::string save_placement;   // --save-placement FILE
  std::string save_torch_plan;  // --save-torch-plan FILE
};

const std::vector<std::string> kFormats = {"text", "json"};

std::string run_place(const PlaceOptions& o) {
  require_format(o.format, kFormats);
  check_placement_selection(o.placement);
  const placement::Graph graph = build_selected_model(o.model);
  const placement::CostModel cost_model = make_cost_model(o.device);
  const PlacementRun run = run_placement(graph, cost_model, o.placement, o.model.micro_batches);
  if (!o.save_torch_plan.empty()) {
    // The placers' default schedule: GPipe over the K stages (every micro-batch kept).
    const placement::Schedule schedule =
        placement::build_schedule({.strategy = placement::StrategyKind::global,
                                   .pipeline = placement::PipelineKind::gpipe,
                                   .stage_count = o.placement.devices,
                                   .micro_batches = o.model.micro_batches});
    placement::write_torch_plan_file(o.save_torch_plan,
                                     placement::torch_plan(graph, run.placement, schedule));
  }
  if (!o.save_placement.empty()) {
    placement::write_placement_file(o.save_placement, graph, run.placement);
  }
  const PlacementContext context{o.model, o.device, o.placement, graph, cost_model, run};
  if (o.format == "json") return placement_json(context).str() + "\n";
  return placement_text(context, true);
}

}  // namespace

Command add_place_command(CLI::App& root) {
  auto options = std::make_shared<PlaceOptions>();
  CLI::App* app = root.add_subcommand(
      "place", "Place a model on K devices: per-device load, memory, stage-chain eligibility");
  add_model_options(*app, options->model);
  add_placement_options(*app, options->placement);
  add_device_options(*app, options->device);
  app->add_option("--save-placement", options->save_placement,
                  "write the placement to this file, for train --placement "
                  "(docs/placers.md#placement-files)");
  app->add_option("--save-torch-plan", options->save_torch_plan,
                  "write the placement as torch.distributed.pipelining's split points and "
                  "GPipe's schedule (simulate --save-torch-plan: any pipeline) to this JSON "
                  "file (docs/your-network.md#a-plan-pytorch-runs)");
  add_format_option(*app, options->format, kFormats);
  set_example(*app, "interplace place --model resnet20 --order topo --placer balanced --devices 4");
  return {app, [options] { return run_place(*options); }};
}

}  // namespace interplace::runs::cli
