// interplace train: one training configuration run for real on the ranks of
// MPI_COMM_WORLD (plan_training + train, training.hpp). Rank 0 prints; every rank exits
// with the same status.
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>

#include "commands.hpp"
#include "device_options.hpp"
#include "error_line.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/runs/auto_profile.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/training.hpp"
#include "json_writer.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct TrainOptions {
  ModelSelection model;
  TrainConfig config;
  int devices = 0;  // 0: the world size
  std::string format;
  // The recipe's names and lists, parsed into the config once the flags are read.
  std::string lr_schedule = "constant";
  std::string lr_milestones;
  std::string lr_milestone_unit = "steps";
  std::string eval_epochs;
  std::string augmentation = "none";
};

void apply_recipe_flags(TrainOptions& o) {
  LrSchedule& s = o.config.lr_schedule;
  s.kind = lr_schedule_by_name(o.lr_schedule);
  s.milestones = parse_number_list("--lr-milestones", o.lr_milestones);
  s.unit = milestone_unit_by_name(o.lr_milestone_unit);
  o.config.eval_epochs = parse_number_list("--eval-epochs", o.eval_epochs);
  o.config.augmentation = augmentation_by_name(o.augmentation);
}

const std::vector<std::string> kFormats = {"text", "json"};

std::string rank_json(int rank, const RankStepRecord& r) {
  return JsonObject()
      .integer("rank", rank)
      .number("step_s", r.step_s)
      .number("forward_s", r.forward_s)
      .number("backward_s", r.backward_s)
      .number("aux_s", r.aux_s)
      .number("optimizer_s", r.optimizer_s)
      .number("comm_wait_s", r.comm_wait_s)
      .number("idle_s", r.idle_s)
      .number("overhead_s", r.overhead_s)
      .number("step_cpu_s", r.step_cpu_s)
      .number("forward_cpu_s", r.forward_cpu_s)
      .number("backward_cpu_s", r.backward_cpu_s)
      .number("aux_cpu_s", r.aux_cpu_s)
      .number("optimizer_cpu_s", r.optimizer_cpu_s)
      .integer("bytes_sent", r.bytes_sent)
      .integer("peak_memory_bytes", r.peak_memory_bytes)
      .str();
}

double median_step_s(const TrainResult& result) {
  std::vector<double> times;
  for (const StepRecord& s : result.steps) {
    if (!s.warmup) times.push_back(s.step_time_s);
  }
  if (times.empty()) return 0.0;
  return kernels::median(std::move(times));
}

std::string step_json(const StepRecord& s) {
  std::vector<std::string> ranks;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    ranks.push_back(rank_json(static_cast<int>(r), s.ranks[r]));
  return JsonObject()
             .integer("step", s.step)
             .boolean("warmup", s.warmup)
             .number("loss", s.loss)
             .number("accuracy", s.accuracy)
             .number("learning_rate", s.learning_rate)
             .number("step_time_s", s.step_time_s)
             .raw("aux_loss", json_array(s.aux_loss, json_number))
             .raw("ranks", json_array(ranks, [](const std::string& j) { return j; }))
             .str() +
         "\n";
}

int64_t predicted_peak_memory_bytes(const TrainPlan& plan) {
  int64_t peak = 0;
  for (const placement::DeviceStep& d : plan.prediction.devices)
    peak = std::max(peak, d.peak_memory_bytes);
  return peak;
}

std::string evaluation_json(const Evaluation& e) {
  return JsonObject()
      .number("epoch", e.epoch)
      .integer("step", e.step)
      .number("loss", e.loss)
      .number("accuracy", e.accuracy)
      .integer("samples", e.samples)
      .str();
}

std::string summary_json(const TrainPlan& plan, const TrainResult& result) {
  const TrainConfig& c = plan.config;
  return JsonObject()
             .boolean("summary", true)
             .string("configuration", c.display_name())
             .string("family", plan.family)
             .integer("parameter_count", plan.parameter_count)
             .integer("batch_size", c.batch_size)
             .integer("micro_batches", c.micro_batches)
             .integer("data_parallel", c.data_parallel)
             .integer("micro_batch_size", plan.graph.batch_size())
             .string("optimizer", placement::to_string(c.optimizer))
             .unsigned_integer("seed", c.seed)
             .integer("predicted_peak_memory_bytes", predicted_peak_memory_bytes(plan))
             .string("global_only_reason", plan.global_only_reason)
             .number("predicted_step_time_s", plan.prediction.step_time_s)
             .number("predicted_idle_fraction", plan.prediction.idle_fraction)
             .number("median_step_time_s", median_step_s(result))
             .number("measured_wall_s", result.measured_wall_s)
             .number("samples_per_s", result.samples_per_s)
             .integer("eval_samples", result.eval_samples)
             .number("eval_loss", result.eval_loss)
             .number("eval_accuracy", result.eval_accuracy)
             .raw("evaluations", json_array(result.evaluations, evaluation_json))
             .str() +
         "\n";
}

std::string header_text(const TrainPlan& plan) {
  std::ostringstream out;
  out << plan.config.display_name() << " (" << plan.parameter_count << " parameters)\n";
  if (!plan.global_only_reason.empty()) out << "global only: " << plan.global_only_reason << "\n";
  return out.str();
}

std::string step_text(const StepRecord& s) {
  std::ostringstream out;
  double idle = 0.0;
  for (const RankStepRecord& r : s.ranks) idle += r.idle_s;
  out << "step " << s.step << (s.warmup ? " (warm-up)" : "") << ": loss " << format_fixed(s.loss, 4)
      << ", accuracy " << format_percent(s.accuracy) << ", " << format_seconds(s.step_time_s)
      << ", idle "
      << format_percent(s.ranks.empty() || s.step_time_s <= 0.0
                            ? 0.0
                            : idle / (static_cast<double>(s.ranks.size()) * s.step_time_s))
      << "\n";
  return out.str();
}

std::string summary_text(const TrainPlan& plan, const TrainResult& result) {
  std::ostringstream out;
  out << "median step " << format_seconds(median_step_s(result)) << " (simulated "
      << format_seconds(plan.prediction.step_time_s) << "), "
      << format_fixed(result.samples_per_s, 1) << " samples/s over "
      << format_seconds(result.measured_wall_s) << "\n";
  for (const Evaluation& e : result.evaluations) {
    out << "epoch " << e.epoch << " (after step " << e.step << "): test loss "
        << format_fixed(e.loss, 4) << ", accuracy " << format_percent(e.accuracy) << " on "
        << e.samples << " samples\n";
  }
  if (result.eval_samples > 0) {
    out << "eval on " << result.eval_samples << " samples: loss "
        << format_fixed(result.eval_loss, 4) << ", accuracy "
        << format_percent(result.eval_accuracy) << "\n";
  }
  return out.str();
}

std::string run_train(TrainOptions& o) {
  require_format(o.format, kFormats);
  MpiSession mpi(nullptr, nullptr);
  try {
    apply_recipe_flags(o);
    TrainConfig config = o.config;
    if (o.model.model.empty() && o.model.graph_file.empty()) {
      throw_invalid("--model is required, or --graph-file");
    }
    if (!o.model.model.empty() && !o.model.graph_file.empty()) {
      throw_invalid("--model '" + o.model.model + "' and --graph-file '" + o.model.graph_file +
                    "' both name a network; give one");
    }
    selected_micro_batch_size(o.model);  // refused here in the flags' names, not the config's
    placement::check_graph_file_options(
        o.model.graph_file.empty() ? placement::ModelOptions{} : o.model.options, "--");
    config.model = o.model.model;
    config.graph_file = o.model.graph_file;
    resolve_graph_file(config);
    config.model_options = o.model.options;
    config.batch_size = o.model.options.batch_size;
    config.micro_batches = o.model.micro_batches;
    config.data_parallel = o.model.data_parallel;
    resolve_epochs(config);
    const int replicas = config.data_parallel;
    if (o.devices <= 0 && replicas > 1 && mpi.world_size() % replicas != 0) {
      throw_invalid("this run's " + std::to_string(mpi.world_size()) +
                    " MPI ranks do not divide into " + std::to_string(replicas) +
                    " data-parallel replicas (K x R ranks). HINT: mpirun -np a multiple of " +
                    std::to_string(replicas) + ", or --devices K with mpirun -np K*" +
                    std::to_string(replicas));
    }
    config.devices = o.devices > 0 ? o.devices : mpi.world_size() / replicas;
    if (config.devices < 1 || config.ranks() != mpi.world_size()) {
      const std::string devices = std::to_string(std::max(1, config.devices));
      throw_invalid(
          replicas == 1
              ? "--devices " + devices + " needs as many MPI ranks, but this run has " +
                    std::to_string(mpi.world_size()) + " (mpirun -np " + devices + ")"
              : "--devices " + devices + " x --data-parallel " + std::to_string(replicas) +
                    " needs " + std::to_string(std::max(1, config.devices) * replicas) +
                    " MPI ranks (replica r's stage j on rank r x " + devices +
                    " + j), but this run has " + std::to_string(mpi.world_size()) +
                    ". HINT: mpirun -np " + std::to_string(std::max(1, config.devices) * replicas) +
                    ", or --devices and --data-parallel whose product is the rank count");
    }
    if (config.profile_path == kAutoProfile) {
      // Measured on this job's ranks first, as a sweep measures it (auto_profile.hpp).
      int threads = mpi.world_rank() == 0 ? auto_profile_threads(config) : 0;
      check_mpi(MPI_Bcast(&threads, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
      if (mpi.world_rank() == 0 && o.format != "json") {
        std::cout << "measuring the profile (--profile auto, " << threads << " CPU threads)\n"
                  << std::flush;
      }
      config.measured_profile =
          measure_on_every_rank(
              [&] {
                const MeasuredProfile measured =
                    measure_profile(auto_profile_request(config, threads), MPI_COMM_WORLD);
                return mpi.world_rank() == 0 ? profile_file_text(measured, "interplace train")
                                             : std::string();
              },
              MPI_COMM_WORLD)
              .profile;
    }
    const TrainPlan plan = plan_training(config);
    const bool json = o.format == "json";
    // Steps are printed as every rank finishes them (a run that fails or is killed has
    // printed what it did; one that fails before its first step prints nothing); the
    // summary follows training.
    const auto print_step = [json, &plan](const StepRecord& s) {
      if (s.step == 0 && !json) std::cout << header_text(plan);
      std::cout << (json ? step_json(s) : step_text(s)) << std::flush;
    };
    const TrainResult result = train(plan, MPI_COMM_WORLD, print_step);
    if (mpi.world_rank() != 0) return "";
    return json ? summary_json(plan, result) : summary_text(plan, result);
  } catch (...) {
    // Every rank fails with the same error (train() propagates it): rank 0 says so.
    report_shared_failure(mpi.world_rank());
  }
}

}  // namespace

Command add_train_command(CLI::App& root) {
  auto o = std::make_shared<TrainOptions>();
  TrainConfig& c = o->config;
  CLI::App* app = root.add_subcommand(
      "train", "Train one configuration for real on the MPI ranks (one rank per device)");
  add_model_options(*app, o->model);
  const char* group = "Training";
  app->add_option("--order", c.order, "traversal order: " + join(placement::order_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option("--placer", c.placer, "placer: " + join(placement::placer_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option("--placement", c.placement_path,
                  "train this placement file (place --save-placement) instead of running the "
                  "placer; --order and --placer then only label the run")
      ->group(group);
  app->add_option("--devices", o->devices,
                  "devices K = MPI ranks / --data-parallel (default: the world size / "
                  "--data-parallel)")
      ->group(group);
  app->add_option("--strategy", c.strategy,
                  "backprop strategy: " + join(placement::strategy_forms()) + " (N >= 1)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--pipeline", c.pipeline,
                  "schedule of the global strategy: " + join(train_pipeline_names()) +
                      " (e2e: one unpipelined pass, M = 1)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--virtual-stages", c.virtual_stages,
                  "interleaved-1f1b: model chunks per device, V (the placer cuts devices x V "
                  "stages, stage s on rank s mod devices)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--data-parallel", o->model.data_parallel,
                  "R replicas of the K-stage pipeline on K x R ranks (rank = replica x K + "
                  "stage): --batch-size stays the global mini-batch, replica r trains its "
                  "slice r of batch-size / R samples, and each stage's gradients are averaged "
                  "over its R replicas before the optimiser step")
      ->capture_default_str()
      ->group(group);
  app->add_option("--interlock-mode", c.interlock_mode,
                  "interlocking gradients: " + join(placement::interlock_mode_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option("--steps", c.steps, "measured steps")->capture_default_str()->group(group);
  app->add_option("--epochs", c.epochs,
                  "run length in epochs of the training split (replaces --steps: steps = "
                  "ceil(E * floor(train size / B)) - warm-up steps)")
      ->check(CLI::NonNegativeNumber)
      ->group(group);
  app->add_option("--eval-epochs", o->eval_epochs,
                  "evaluate the whole test split after these epochs (\"1,2,5\")")
      ->group(group);
  app->add_option("--eval-epoch-samples", c.eval_epoch_samples,
                  "evaluate only the first N test samples at --eval-epochs (0: the whole test "
                  "split)")
      ->group(group);
  app->add_option("--train-samples", c.train_samples,
                  "train on the first N training samples only, reshuffled each epoch; epochs "
                  "count in them (0: the whole split; fashion-mnist)")
      ->group(group);
  app->add_flag("--weight-decay-all", c.weight_decay_all,
                "weight decay on every parameter (biases, norm parameters), as the study's "
                "SGD; default: convolution and linear weights only")
      ->group(group);
  add_aux_head_options(*app, c.aux_head, group);
  app->add_option("--augmentation", o->augmentation,
                  "training-batch augmentation of image data: none, crop-flip")
      ->capture_default_str()
      ->group(group);
  app->add_option("--warmup-steps", c.warmup_steps, "warm-up steps (recorded, flagged)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--dataset", c.dataset, "data set: " + join(dataset_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option("--data-dir", c.data_dir, "data set directory (default: its Debian location)")
      ->group(group);
  app->add_option("--eval-samples", c.eval_samples, "test samples evaluated at the end")
      ->capture_default_str()
      ->group(group);
  add_optimizer_option(*app, c.optimizer, "optimiser")->group(group);
  app->add_option("--learning-rate", c.learning_rate, "learning rate")
      ->capture_default_str()
      ->group(group);
  app->add_option("--weight-decay", c.weight_decay, "weight decay")
      ->capture_default_str()
      ->group(group);
  app->add_option("--lr-schedule", o->lr_schedule,
                  "learning-rate schedule: " + join(lr_schedule_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option("--lr-milestones", o->lr_milestones,
                  "step schedule: where the rate is multiplied by --lr-decay (\"91,136,182\")")
      ->group(group);
  app->add_option("--lr-milestone-unit", o->lr_milestone_unit,
                  "unit of --lr-milestones: "
                  "steps, epochs")
      ->capture_default_str()
      ->group(group);
  app->add_option("--lr-decay", c.lr_schedule.decay, "factor per milestone")
      ->capture_default_str()
      ->group(group);
  app->add_option("--warmup-lr-steps", c.lr_schedule.warmup_steps,
                  "linear learning-rate warm-up over the first N steps (0: none)")
      ->capture_default_str()
      ->group(group);
  add_seed_option(*app, c.seed, "seed of weights, data order, dropout, random orders/placers")
      ->group(group);
  app->add_option("--device", c.device, "device each rank computes on: " + join(device_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option(
         "--cost-device", c.cost_device,
         "device preset of the placer's cost model: " + join(placement::device_preset_names()))
      ->capture_default_str()
      ->group(group);
  app->add_option("--profile", c.profile_path,
                  "measured profile for the cost model, or auto: measured in this job first")
      ->group(group);
  app->add_option("--threads-per-rank", c.threads_per_rank,
                  "CPU threads per rank (0: cores on the node / ranks on the node)")
      ->capture_default_str()
      ->group(group);
  app->add_option("--time-limit-s", c.time_limit_s,
                  "wall-clock seconds the steps may take; past it the run fails (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(group);
  app->add_option("--watchdog-s", c.watchdog_s,
                  "seconds a rank may wait for another before the run fails (a stopped or "
                  "hung rank)")
      ->capture_default_str()
      ->group(group);
  add_format_option(*app, o->format, kFormats);
  set_example(*app,
              "mpirun -np 2 interplace train --model resnet20 --batch-size 32 --micro-batches 4 "
              "--placer contiguous --steps 5");
  return {app, [o] { return run_train(*o); }};
}

}  // namespace interplace::runs::cli
