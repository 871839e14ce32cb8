// interplace simulate: places a model (as `place`) and simulates one training step under a
// backprop strategy and pipeline schedule.
#include <memory>
#include <optional>

#include "commands.hpp"
#include "device_options.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/step_simulation.hpp"
#include "interplace/placement/torch_plan.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"
#include "placement_report.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct SimulateOptions {
  ModelSelection model;
  DeviceSelection device;
  PlacementSelection placement;
  std::string strategy = "global";
  std::string pipeline;    // empty: gpipe for the global strategy
  int virtual_stages = 1;  // chunks per device (interleaved-1f1b, looped-bfs, ...)
  int mini_batches = 1;
  placement::AuxHeadWidth aux_head = placement::AuxHeadWidth::study;  // as train's --aux-head
  std::string format;
  // A device preset whose roofline orders and places the graph while the device options
  // (a profile) time the step: to simulate, with measured costs, the placement that a run
  // planned on that preset trained on (its cost_device). Empty: one cost model for both.
  std::string place_with;
  std::string save_torch_plan;  // --save-torch-plan FILE
};

const std::vector<std::string> kFormats = {"text", "json"};

std::string step_header(const SimulateOptions& o, const placement::StepReport& step) {
  std::string out = "strategy " + o.strategy + " (reach " + std::to_string(step.reach) + ")";
  if (step.pipeline) out += ", " + placement::to_string(*step.pipeline) + " pipeline";
  if (o.virtual_stages > 1) out += " (" + std::to_string(o.virtual_stages) + " virtual stages)";
  out += ", " + plural(o.model.micro_batches, "micro-batch", "micro-batches") + ", " +
         plural(o.mini_batches, "mini-batch", "mini-batches") + ": ";
  out += step.messages == placement::MessageLevel::stage
             ? "event simulator\n"
             : "event simulator, node-level list schedule (" + step.node_level_reason + ")\n";
  if (step.data_parallel > 1) {
    const int k = static_cast<int>(step.devices.size());
    out += "data parallel: " + std::to_string(step.data_parallel) + " replicas x " +
           std::to_string(k) + " devices = " + std::to_string(step.data_parallel * k) +
           " devices (job rank = replica x " + std::to_string(k) + " + device); batch size " +
           std::to_string(o.model.options.batch_size) + " = " +
           std::to_string(o.model.options.batch_size / step.data_parallel) +
           " per replica; each device's gradients ring all-reduced before its optimiser step\n";
  }
  return out;
}

std::string simulate_text(const SimulateOptions& o, const PlacementContext& context,
                          const placement::StepReport& step) {
  const int64_t capacity = context.cost_model.device().memory_capacity_bytes;
  std::string out = placement_text(context, false) + "\n" + step_header(o, step);
  out += "step time: " + format_seconds(step.step_time_s) + "\n";
  out += "idle fraction: " + format_percent(step.idle_fraction) + "\n\n";
  const bool data_parallel = step.data_parallel > 1;
  std::vector<std::string> columns = {"device", "busy", "idle", "peak memory", "fits", "aux head"};
  if (data_parallel) columns.emplace_back("all-reduce");
  TextTable table(columns);
  std::vector<std::string> over;
  for (size_t d = 0; d < step.devices.size(); ++d) {
    const placement::DeviceStep& s = step.devices[d];
    const bool fits = s.peak_memory_bytes <= capacity;
    if (!fits) over.push_back(std::to_string(d));
    std::vector<std::string> row = {
        std::to_string(d),
        format_seconds(s.busy_s),
        format_seconds(s.idle_s),
        format_bytes(static_cast<double>(s.peak_memory_bytes)),
        fits ? "yes" : "NO",
        s.has_aux_head ? format_percent(s.aux_head_s / s.busy_s) + " of busy" : "no"};
    if (data_parallel) row.push_back(format_seconds(s.allreduce_s));
    table.add_row(row);
  }
  out += table.str();
  if (!over.empty()) {
    out += "warning: device(s) " + join(over) + " would exceed the " +
           format_bytes(static_cast<double>(capacity)) + " of memory per device\n";
  }
  return out;
}

std::string simulate_json(const SimulateOptions& o, const PlacementContext& context,
                          const placement::StepReport& step) {
  const int64_t capacity = context.cost_model.device().memory_capacity_bytes;
  std::vector<std::string> devices;
  for (size_t d = 0; d < step.devices.size(); ++d) {
    const placement::DeviceStep& s = step.devices[d];
    devices.push_back(JsonObject()
                          .integer("device", static_cast<int64_t>(d))
                          .number("busy_s", s.busy_s)
                          .number("idle_s", s.idle_s)
                          .integer("peak_memory_bytes", s.peak_memory_bytes)
                          .boolean("fits_memory", s.peak_memory_bytes <= capacity)
                          .boolean("has_aux_head", s.has_aux_head)
                          .number("aux_head_s", s.aux_head_s)
                          .number("allreduce_s", s.allreduce_s)
                          .str());
  }
  JsonObject simulation;
  simulation.string("strategy", o.strategy).integer("reach", step.reach);
  if (step.pipeline) {
    simulation.string("pipeline", placement::to_string(*step.pipeline));
  } else {
    simulation.null("pipeline");
  }
  simulation.integer("virtual_stages", o.virtual_stages)
      .integer("data_parallel", step.data_parallel)
      .integer("micro_batches", o.model.micro_batches)
      .integer("mini_batches", o.mini_batches)
      .string("messages", placement::to_string(step.messages));
  if (step.node_level_reason.empty()) {
    simulation.null("node_level_reason");
  } else {
    simulation.string("node_level_reason", step.node_level_reason);
  }
  simulation.number("step_time_s", step.step_time_s)
      .number("idle_fraction", step.idle_fraction)
      .raw("devices", json_array(devices, [](const std::string& s) { return s; }));
  return placement_json(context).raw("simulation", simulation.str()).str() + "\n";
}

std::string run_simulate(SimulateOptions o) {
  require_format(o.format, kFormats);
  check_placement_selection(o.placement);
  // Bad strategy or pipeline names fail before the (possibly slow) placement.
  const int k = o.placement.devices;
  std::optional<placement::PipelineKind> pipeline;
  if (!o.pipeline.empty()) pipeline = placement::pipeline_by_name(o.pipeline);
  const placement::PipelinePlan plan =
      placement::plan_pipeline({.pipeline = pipeline,
                                .reach = placement::strategy_reach(o.strategy, k),
                                .strategy = o.strategy,
                                .devices = k,
                                .virtual_stages = o.virtual_stages,
                                .micro_batches = o.model.micro_batches});
  // The placer cuts the plan's K*V stages and charges each the micro-batches the pipeline
  // keeps at once (1F1B and ZB-H1: K; interleaved 1F1B: K on each of a device's V stages);
  // without --pipeline the placers' own default.
  PlacementSelection selection = o.placement;
  selection.devices = plan.stages();
  if (pipeline) selection.kept_micro_batches = plan.kept_micro_batches;
  placement::StepRequest request;
  request.strategy = o.strategy;
  if (pipeline) request.pipeline = plan.kind;
  request.virtual_stages = plan.virtual_stages;
  o.virtual_stages = plan.virtual_stages;  // what runs (zbv: 2, its one count), as reported
  request.micro_batches = o.model.micro_batches;
  request.data_parallel = o.model.data_parallel;
  // Bounded (placement/schedule.hpp): the schedule holds every pass of every mini-batch.
  if (o.mini_batches < 1 || o.mini_batches > placement::kMaxMiniBatches) {
    throw_invalid("--mini-batches must be in 1.." + std::to_string(placement::kMaxMiniBatches) +
                  ", got " + std::to_string(o.mini_batches));
  }
  request.mini_batches = o.mini_batches;
  request.aux_heads.width_multiplier = o.model.options.width_multiplier;
  request.aux_heads.width = o.aux_head;

  const placement::Graph graph = build_selected_model(o.model);
  const placement::CostModel cost_model = make_cost_model(o.device);
  PlacementRun run;
  if (o.place_with.empty()) {
    run = run_placement(graph, cost_model, selection, o.model.micro_batches);
  } else {
    DeviceSelection planner;
    planner.preset = o.place_with;
    planner.optimizer = o.device.optimizer;
    run = run_placement(graph, make_cost_model(planner), selection, o.model.micro_batches);
    run.costs = cost_model.node_costs(graph);
  }
  const PlacementContext context{o.model, o.device, selection, graph, cost_model, run};
  if (!o.save_torch_plan.empty()) {
    // The schedule simulated, one mini-batch of it (PyTorch's step).
    placement::StepRequest one_step = request;
    one_step.mini_batches = 1;
    placement::write_torch_plan_file(
        o.save_torch_plan,
        placement::torch_plan(
            graph, run.placement,
            placement::plan_step_schedule(graph, run.placement, run.costs, cost_model,
                                          placement::step_schedule_request(one_step, k))));
  }
  const placement::StepReport step =
      placement::simulate_step(graph, run.placement, run.costs, cost_model, request);
  return o.format == "json" ? simulate_json(o, context, step) : simulate_text(o, context, step);
}

}  // namespace

Command add_simulate_command(CLI::App& root) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* app = root.add_subcommand(
      "simulate", "Place a model, then simulate one training step under a backprop strategy");
  add_model_options(*app, options->model);
  add_placement_options(*app, options->placement);
  app->add_option("--strategy", options->strategy,
                  "backprop strategy: " + join(placement::strategy_forms()) + " (N >= 1)")
      ->capture_default_str()
      ->group("Strategy");
  app->add_option("--pipeline", options->pipeline,
                  "schedule of the global strategy: " + join(placement::pipeline_names()) +
                      " (default gpipe)")
      ->capture_default_str()
      ->group("Strategy");
  app->add_option("--virtual-stages", options->virtual_stages,
                  "interleaved-1f1b, looped-bfs: model chunks per device, V (the placer "
                  "cuts devices x V stages, stage s on device s mod devices)")
      ->capture_default_str()
      ->group("Strategy");
  app->add_option("--place-with", options->place_with,
                  "order and place on this device preset's roofline, then simulate with the "
                  "device options (e.g. --profile): the placement of a run planned on that "
                  "preset (its cost_device)")
      ->group("Strategy");
  app->add_option("--data-parallel", options->model.data_parallel,
                  "R replicas of the pipeline on devices x R devices (job rank = replica x "
                  "devices + device): --batch-size is the global mini-batch, each replica "
                  "trains batch-size / R of it, and each device's gradients are all-reduced "
                  "over its R replicas before the optimiser step; one replica is simulated")
      ->capture_default_str()
      ->group("Strategy");
  add_aux_head_options(*app, options->aux_head, "Strategy");
  app->add_option("--mini-batches", options->mini_batches,
                  "mini-batches simulated back to back (times are per mini-batch)")
      ->capture_default_str()
      ->group("Strategy");
  app->add_option("--save-torch-plan", options->save_torch_plan,
                  "write the placement and the pipeline's schedule (global strategy) as "
                  "torch.distributed.pipelining's split points, schedule class and per-rank "
                  "action lists to this JSON file (docs/your-network.md#a-plan-pytorch-runs)")
      ->group("Strategy");
  add_device_options(*app, options->device);
  add_format_option(*app, options->format, kFormats);
  set_example(*app,
              "interplace simulate --model resnet20 --order topo --placer contiguous --devices 4 "
              "--batch-size 128 --micro-batches 4 --pipeline 1f1b");
  return {app, [options] { return run_simulate(*options); }};
}

}  // namespace interplace::runs::cli
