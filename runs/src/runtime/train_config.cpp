#include <algorithm>
#include <sstream>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/name_choices.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

TrainPipeline::TrainPipeline(std::string_view name) {
  if (name == kEndToEndName) {
    kind_.reset();
    return;
  }
  const std::vector<std::string>& names = placement::pipeline_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw_invalid("unknown pipeline '" + std::string(name) +
                  "' (valid: " + join_names(train_pipeline_names()) + ")");
  }
  kind_ = placement::pipeline_by_name(name);
}

RuntimeKind runtime_by_name(std::string_view name) {
  if (name == "native") return RuntimeKind::native;
  if (name == "torch") return RuntimeKind::torch;
  throw_invalid("unknown runtime '" + std::string(name) + "' (valid: native, torch)");
}

std::string to_string(RuntimeKind kind) {
  return kind == RuntimeKind::torch ? "torch" : "native";
}

std::vector<std::string> runtime_names() {
  return {"native", "torch"};
}

std::string to_string(const TrainPipeline& pipeline) {
  return pipeline.end_to_end() ? std::string(kEndToEndName)
                               : placement::to_string(*pipeline.pipeline());
}

std::vector<std::string> train_pipeline_names() {
  std::vector<std::string> out = placement::pipeline_names();
  out.emplace_back(kEndToEndName);
  return out;
}

kernels::Device DeviceSet::by_name(std::string_view name) {
  return device_by_name(std::string(name));
}

std::vector<std::string> DeviceSet::names() {
  return device_names();
}

std::string TrainConfig::display_name() const {
  std::ostringstream name;
  name << model << ' ' << to_string(order) << ' ' << to_string(placer) << " K=" << devices << ' '
       << to_string(strategy);
  if (strategy.kind == placement::StrategyKind::global) name << '/' << to_string(pipeline);
  if (virtual_stages != 1) name << " V=" << virtual_stages;
  if (data_parallel != 1) name << " R=" << data_parallel;
  if (interlock_mode != placement::InterlockMode::single) name << '/' << to_string(interlock_mode);
  name << " M=" << micro_batches << " B=" << batch_size;
  return name.str();
}

void resolve_graph_file(TrainConfig& c) {
  if (c.graph_file.empty()) return;
  const std::string digest = placement::graph_file_digest(c.graph_file);
  const placement::GraphFile file = placement::read_graph_file(c.graph_file);
  c.model = file.graph.name();
  c.graph_digest = digest;
  c.graph_family = file.family;
}

placement::Graph build_config_graph(const TrainConfig& c, std::string* family) {
  // The graph is one micro-batch: the unit of the schedules, the cost model and profiles.
  const int64_t micro_batch = c.micro_batch_samples();
  if (c.graph_file.empty()) {
    const placement::ModelInfo& info = placement::find_model(c.model);  // "enas-cnn:7" too
    if (family != nullptr) *family = info.family;
    placement::ModelOptions options = c.model_options;
    options.batch_size = micro_batch;
    return placement::build_model(c.model, options);
  }
  placement::check_graph_file_options(c.model_options, "model_options.");
  if (!c.graph_digest.empty() && placement::graph_file_digest(c.graph_file) != c.graph_digest) {
    throw_invalid("graph file '" + c.graph_file +
                  "' changed since the configuration was made (its id holds the file's digest " +
                  c.graph_digest + "); start the sweep anew");
  }
  placement::GraphFile file = placement::read_graph_file(c.graph_file);
  if (family != nullptr) *family = file.family;
  return placement::rebatch_graph(file.graph, micro_batch);
}

namespace {

// What is left of the training split for training: the split less the validation samples,
// or the training subset taken from it.
int64_t training_samples(const TrainConfig& c) {
  if (c.train_samples > 0) return c.train_samples;
  const int64_t size = dataset_train_size(to_string(c.dataset));
  return size - validation_held_out(size, c.validation_fraction);
}

}  // namespace

int64_t config_steps_per_epoch(const TrainConfig& c) {
  const int64_t size = training_samples(c);
  if (size <= 0 || c.batch_size < 1 || c.batch_size > size) return 0;
  return steps_per_epoch(size, c.batch_size);
}

void resolve_epochs(TrainConfig& c) {
  check_scalar_fields(c);
  check_lr_schedule(c.lr_schedule);
  const std::string dataset = to_string(c.dataset);
  check_train_subset(dataset, c.train_samples);
  check_validation_split(dataset, c.validation_fraction);
  if (c.validation_fraction > 0.0 && c.train_samples > 0) {
    const int64_t size = dataset_train_size(dataset);
    const int64_t left = size - validation_held_out(size, c.validation_fraction);
    if (c.train_samples > left) {
      throw_invalid("train_samples " + std::to_string(c.train_samples) + " is more than the " +
                    std::to_string(left) + " training samples validation_fraction " +
                    number_text(c.validation_fraction) + " leaves of " + dataset + "'s " +
                    std::to_string(size));
    }
  }
  if (c.validation_fraction > 0.0 && c.eval_epochs.empty()) {
    throw_invalid("validation_fraction " + number_text(c.validation_fraction) +
                  " holds out samples that are only evaluated at eval_epochs, and the run has "
                  "none. HINT: give eval_epochs (train --eval-epochs \"1,2,3\")");
  }
  if (c.eval_epoch_samples > 0 && c.micro_batches >= 1 &&
      c.eval_epoch_samples < c.replica_batch_size() / c.micro_batches) {
    throw_invalid("eval_epoch_samples " + std::to_string(c.eval_epoch_samples) +
                  " is less than one micro-batch of " +
                  std::to_string(c.replica_batch_size() / c.micro_batches) +
                  " test samples (evaluation runs in micro-batches)");
  }
  const bool uses_epochs =
      c.epochs != 0.0 || !c.eval_epochs.empty() ||
      (c.lr_schedule.kind == LrScheduleKind::step && c.lr_schedule.unit == MilestoneUnit::epochs);
  if (!uses_epochs) return;
  const int64_t per_epoch = config_steps_per_epoch(c);
  if (per_epoch == 0) {
    throw_invalid(
        "epochs (epochs, eval_epochs, epoch milestones) need a data set whose "
        "training size is known before reading it and at least one batch of " +
        std::to_string(c.batch_size) + " per epoch; '" + dataset +
        "' has not. HINT: count in steps");
  }
  if (c.epochs > 0.0) {
    const int64_t total = steps_for_epochs(c.epochs, per_epoch);
    if (total - c.warmup_steps < 1 || total > 1'000'000'000) {
      throw_invalid("epochs " + std::to_string(c.epochs) + " make " + std::to_string(total) +
                    " steps of " + std::to_string(per_epoch) + " per epoch; with " +
                    std::to_string(c.warmup_steps) + " warm-up steps none is left to measure");
    }
    c.steps = static_cast<int>(total - c.warmup_steps);
  }
  const int64_t total = int64_t{c.warmup_steps} + c.steps;
  for (const double e : c.eval_epochs) {
    if (last_step_of_epoch(e, per_epoch) >= total) {
      throw_invalid("eval_epochs: epoch " + std::to_string(e) + " ends after the run's " +
                    std::to_string(total) + " steps (" + std::to_string(per_epoch) + " per epoch)");
    }
  }
}

placement::PipelineKind config_pipeline(const TrainConfig& c) {
  if (!c.pipeline.end_to_end()) return c.pipeline.scheduled();
  if (c.micro_batches != 1) {
    throw_invalid("pipeline e2e is one unpipelined pass: micro_batches must be 1, got " +
                  std::to_string(c.micro_batches) + ". HINT: gpipe or 1f1b for M > 1");
  }
  return placement::PipelineKind::gpipe;
}

placement::AuxHeadOptions config_aux_heads(const TrainConfig& c) {
  placement::AuxHeadOptions options;
  options.width_multiplier = c.model_options.width_multiplier;
  options.width = c.aux_head;
  return options;
}

double config_learning_rate(const TrainConfig& c, int step) {
  return learning_rate_at(c.lr_schedule, c.learning_rate, step, c.warmup_steps + c.steps,
                          config_steps_per_epoch(c));
}

}  // namespace interplace::runs
