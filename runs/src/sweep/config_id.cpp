// The identity of a configuration: the same parameters give the same id in every file, so
// shards merge and --resume recognises finished work (docs/results-format.md).
#include <cstdio>

#include "interplace/runs/sweep_spec.hpp"
#include "spec_dimensions.hpp"

namespace interplace::runs {

namespace {

// printf's %.17g: exact, and the same text in every language that recomputes ids.
std::string exact_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

}  // namespace

std::vector<ModelOptionValue> model_option_values(const placement::ModelOptions& o) {
  std::vector<ModelOptionValue> out;
  auto add_int = [&out](const char* key, int64_t value) {
    if (value != 0) out.push_back({key, std::to_string(value), true, value, 0.0});
  };
  auto add_real = [&out](const char* key, double value) {
    if (value != 1.0) out.push_back({key, sweep::number_text(value), false, 0, value});
  };
  // batch_size is not listed: the configuration's batch_size and micro_batches decide it.
  add_int("in_channels", o.in_channels);
  add_int("image_size", o.image_size);
  add_int("classes", o.classes);
  add_int("sequence_length", o.sequence_length);
  add_int("layers", o.layers);
  add_int("dim", o.dim);
  add_int("heads", o.heads);
  add_int("vocab_size", o.vocab_size);
  add_int("max_positions", o.max_positions);
  add_real("width_multiplier", o.width_multiplier);
  add_real("depth_multiplier", o.depth_multiplier);
  return out;
}

std::string model_options_string(const placement::ModelOptions& o) {
  std::string out;
  for (const ModelOptionValue& v : model_option_values(o)) {
    if (!out.empty()) out += ',';
    out.append(v.key).append("=").append(v.text);
  }
  return out;
}

std::string cost_device_string(const TrainConfig& config) {
  return config.profile_path.empty() ? config.cost_device : "profile:" + config.profile_path;
}

std::string canonical_parameters(const TrainConfig& c, int repeat) {
  std::string out;
  auto line = [&out](const char* key, const std::string& value) {
    out += std::string(key) + "=" + value + "\n";
  };
  line("model", c.model);
  line("order", c.order);
  line("placer", c.placer);
  line("devices", std::to_string(c.devices));
  line("strategy", c.strategy);
  line("pipeline", c.pipeline);
  line("interlock_mode", c.interlock_mode);
  line("micro_batches", std::to_string(c.micro_batches));
  line("batch_size", std::to_string(c.batch_size));
  line("warmup_steps", std::to_string(c.warmup_steps));
  line("steps", std::to_string(c.steps));
  line("dataset", c.dataset);
  line("eval_samples_requested", std::to_string(c.eval_samples));
  line("optimizer", placement::to_string(c.optimizer));
  line("learning_rate", exact_text(c.learning_rate));
  line("weight_decay", exact_text(c.weight_decay));
  line("seed", std::to_string(c.seed));
  line("device", c.device);
  line("cost_device", cost_device_string(c));
  line("model_options", model_options_string(c.model_options));
  line("data_dir", c.data_dir);
  // The recipe's keys only where they differ from the defaults, so that the ids of
  // configurations written before the recipe existed stay the same (resume, merge).
  if (!c.lr_schedule.is_default() || !c.lr_schedule.milestones.empty()) {
    line("lr_schedule", to_string(c.lr_schedule.kind));
    line("lr_milestones", number_list_text(c.lr_schedule.milestones));
    line("lr_milestone_unit", to_string(c.lr_schedule.unit));
    line("lr_decay", exact_text(c.lr_schedule.decay));
    line("warmup_lr_steps", std::to_string(c.lr_schedule.warmup_steps));
  }
  if (c.epochs != 0.0) line("epochs", exact_text(c.epochs));
  if (!c.eval_epochs.empty()) line("eval_epochs", number_list_text(c.eval_epochs));
  if (c.eval_epoch_samples != 0) line("eval_epoch_samples", std::to_string(c.eval_epoch_samples));
  if (c.train_samples != 0) line("train_samples", std::to_string(c.train_samples));
  if (c.augmentation != Augmentation::none) line("augmentation", to_string(c.augmentation));
  // Capped kept its line of before the widths had names, so its ids did not change.
  if (c.aux_head == placement::AuxHeadWidth::capped) line("aux_head_capped", "1");
  if (c.aux_head == placement::AuxHeadWidth::proportional) line("aux_head", "proportional");
  if (c.weight_decay_all) line("weight_decay_all", "1");
  if (c.threads_per_rank != 0) line("threads_per_rank", std::to_string(c.threads_per_rank));
  // A graph file's network (docs/your-network.md): its path and the digest of its bytes;
  // absent for zoo models, so their ids are unchanged.
  if (!c.graph_file.empty()) {
    line("graph_file", c.graph_file);
    line("graph_digest", c.graph_digest);
  }
  // Interleaved 1F1B's chunks per device: only when not 1, so that the ids of
  // configurations from before the key stay as they were.
  if (c.virtual_stages != 1) line("virtual_stages", std::to_string(c.virtual_stages));
  // Data-parallel replicas: only when not 1, for the same reason.
  if (c.data_parallel != 1) line("data_parallel", std::to_string(c.data_parallel));
  line("repeat", std::to_string(repeat));
  return out;
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string config_id(const TrainConfig& config, int repeat) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx",
                static_cast<unsigned long long>(fnv1a64(canonical_parameters(config, repeat))));
  return buffer;
}

}  // namespace interplace::runs
