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
#include "interplace/placement/graph_file.hpp"
#include "interplace/runs/auto_profile.hpp"
#include "interplace/runs/config_fields.hpp"
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
};

// The schema's flags (config_fields.hpp): each value is read, checked and set as the same
// key of a spec would be, so `train --steps 0` and `steps = 0` give one message.
void add_config_flags(CLI::App& app, TrainConfig& config, const std::string& group) {
  for (const ConfigField& field : settable_fields()) {
    if (field.flag.empty()) continue;
    const auto set = [&config, &field](const std::string& text) {
      try {
        field.set(config, parse_field_text(field, text));
      } catch (const Error& e) {
        throw CLI::ValidationError(field.flag, e.what());
      }
    };
    CLI::Option* option = field.switch_flag
                              ? app.add_flag_callback(
                                    field.flag, [set] { set("1"); }, field.help)
                              : app.add_option_function<std::string>(field.flag, set, field.help)
                                    ->default_str(field.default_value().text)
                                    ->type_name(field.kind == ValueKind::integer  ? "INT"
                                                : field.kind == ValueKind::number ? "FLOAT"
                                                                                  : "TEXT");
    option->group(group);
  }
}

const std::vector<std::string> kFormats = {"text", "json"};

std::string rank_json(int rank, const RankStepRecord& r) {
  JsonObject json;
  json.integer("rank", rank);
  for (const RankStepField& field : kRankStepFields) {
    if (field.count != nullptr) {
      json.integer(field.name, r.*field.count);
    } else {
      json.number(field.name, r.*field.seconds);
    }
  }
  return json.str();
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

// The validation fields only where a validation split was held out.
std::string evaluation_json(const Evaluation& e) {
  JsonObject o;
  o.number("epoch", e.epoch)
      .integer("step", e.step)
      .number("loss", e.loss)
      .number("accuracy", e.accuracy)
      .integer("samples", e.samples);
  if (e.validation_samples > 0) {
    o.number("validation_loss", e.validation_loss)
        .number("validation_accuracy", e.validation_accuracy)
        .integer("validation_samples", e.validation_samples);
  }
  return o.str();
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
        << e.samples << " samples";
    if (e.validation_samples > 0) {
      out << "; validation loss " << format_fixed(e.validation_loss, 4) << ", accuracy "
          << format_percent(e.validation_accuracy) << " on " << e.validation_samples << " samples";
    }
    out << "\n";
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
                return measure_auto_profile(config, threads, MPI_COMM_WORLD, "interplace train");
              },
              MPI_COMM_WORLD)
              .profile;
    }
    const TrainPlan plan = plan_config(config);
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
  add_config_flags(*app, c, group);
  app->add_option("--placement", c.placement_path,
                  "train this placement file (place --save-placement) instead of running the "
                  "placer; --order and --placer then only label the run")
      ->group(group);
  app->add_option("--devices", o->devices,
                  "devices K = MPI ranks / --data-parallel (default: the world size / "
                  "--data-parallel)")
      ->group(group);
  app->add_option("--data-parallel", o->model.data_parallel,
                  "R replicas of the K-stage pipeline on K x R ranks (rank = replica x K + "
                  "stage): --batch-size stays the global mini-batch, replica r trains its "
                  "slice r of batch-size / R samples, and each stage's gradients are averaged "
                  "over its R replicas before the optimiser step")
      ->capture_default_str()
      ->group(group);
  add_aux_head_options(*app, c.aux_head, group);
  add_optimizer_option(*app, c.optimizer, "optimiser")->group(group);
  add_seed_option(*app, c.seed, "seed of weights, data order, dropout, random orders/placers")
      ->group(group);
  app->add_option("--profile", c.profile_path,
                  "measured profile for the cost model, or auto: measured in this job first")
      ->group(group);
  add_format_option(*app, o->format, kFormats);
  set_example(*app,
              "mpirun -np 2 interplace train --model resnet20 --batch-size 32 --micro-batches 4 "
              "--placer contiguous --steps 5");
  return {app, [o] { return run_train(*o); }};
}

}  // namespace interplace::runs::cli
