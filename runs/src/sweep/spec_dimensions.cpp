#include "spec_dimensions.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/name_choices.hpp"

namespace interplace::runs::sweep {
namespace {

std::function<void(const DimValue&)> at_least(const std::string& key, int64_t minimum) {
  return [key, minimum](const DimValue& v) {
    if (v.integer < minimum) {
      throw_invalid(key + " must be >= " + std::to_string(minimum) + ", got " + v.text);
    }
  };
}

// Counts the runtime keeps in an int.
std::function<void(const DimValue&)> int_at_least(const std::string& key, int64_t minimum) {
  return [key, minimum](const DimValue& v) {
    at_least(key, minimum)(v);
    if (v.integer > 1'000'000'000) throw_invalid(key + " is too large: " + v.text);
  };
}

// Real numbers: finite, and > 0 or >= 0; `unit` goes into the message (" of seconds").
std::function<void(const DimValue&)> finite_number(const std::string& key, bool zero_allowed,
                                                   const std::string& unit = "") {
  return [key, zero_allowed, unit](const DimValue& v) {
    if (!std::isfinite(v.number) || v.number < 0.0 || (!zero_allowed && v.number == 0.0)) {
      throw_invalid(key + " must be a finite number" + unit + (zero_allowed ? " >= 0" : " > 0") +
                    ", got " + v.text);
    }
  };
}

Dimension text_dim(std::string key, std::string plural, std::string fallback,
                   std::function<void(const DimValue&)> check, std::string TrainConfig::*field) {
  return {std::move(key),    std::move(plural),
          ValueKind::string, {std::move(fallback)},
          std::move(check),  [field](TrainConfig& c, const DimValue& v) { c.*field = v.text; }};
}

std::vector<Dimension> make_dimensions() {
  const TrainConfig d;
  std::vector<Dimension> dims;
  dims.push_back(text_dim(
      "model", "models", d.model,
      // A seeded family's set ("enas-cnn:0..31") stands for its members: read_sections
      // expands it; every member is checked here.
      [](const DimValue& v) { placement::expand_model_names(v.text); }, &TrainConfig::model));
  // A graph file's network instead of `model` (docs/your-network.md); "" is none. The file is
  // read and checked here, so a bad one is a spec error with its line.
  dims.push_back(text_dim(
      "graph_file", "graph_files", d.graph_file,
      [](const DimValue& v) {
        if (!v.text.empty()) placement::read_graph_file(v.text);
      },
      &TrainConfig::graph_file));
  dims.push_back(text_dim(
      "dataset", "datasets", d.dataset,
      [](const DimValue& v) { require_name("dataset", v.text, dataset_names()); },
      &TrainConfig::dataset));
  dims.push_back(text_dim(
      "data_dir", "", d.data_dir, [](const DimValue&) {}, &TrainConfig::data_dir));
  dims.push_back(
      {"devices",
       "",
       ValueKind::integer,
       {std::to_string(d.devices)},
       int_at_least("devices", 1),
       [](TrainConfig& c, const DimValue& v) { c.devices = static_cast<int>(v.integer); }});
  dims.push_back(text_dim(
      "order", "orders", d.order, [](const DimValue& v) { placement::order_by_name(v.text); },
      &TrainConfig::order));
  dims.push_back(text_dim(
      "placer", "placers", d.placer, [](const DimValue& v) { placement::placer_by_name(v.text); },
      &TrainConfig::placer));
  dims.push_back(text_dim(
      "strategy", "strategies", d.strategy,
      [](const DimValue& v) { placement::strategy_reach(v.text, 1 << 20); },
      &TrainConfig::strategy));
  dims.push_back(text_dim(
      "pipeline", "pipelines", d.pipeline,
      [](const DimValue& v) { require_name("pipeline", v.text, train_pipeline_names()); },
      &TrainConfig::pipeline));
  dims.push_back(text_dim(
      "interlock_mode", "interlock_modes", d.interlock_mode,
      [](const DimValue& v) {
        require_name("interlock_mode", v.text, {"single", "sum"});
      },
      &TrainConfig::interlock_mode));
  dims.push_back(
      {"virtual_stages",
       "",
       ValueKind::integer,
       {std::to_string(d.virtual_stages)},
       int_at_least("virtual_stages", 1),
       [](TrainConfig& c, const DimValue& v) { c.virtual_stages = static_cast<int>(v.integer); }});
  dims.push_back(
      {"data_parallel",
       "",
       ValueKind::integer,
       {std::to_string(d.data_parallel)},
       int_at_least("data_parallel", 1),
       [](TrainConfig& c, const DimValue& v) { c.data_parallel = static_cast<int>(v.integer); }});
  dims.push_back(
      {"micro_batches",
       "",
       ValueKind::integer,
       {std::to_string(d.micro_batches)},
       int_at_least("micro_batches", 1),
       [](TrainConfig& c, const DimValue& v) { c.micro_batches = static_cast<int>(v.integer); }});
  dims.push_back({"batch_size",
                  "batch_sizes",
                  ValueKind::integer,
                  {std::to_string(d.batch_size)},
                  at_least("batch_size", 1),
                  [](TrainConfig& c, const DimValue& v) { c.batch_size = v.integer; }});
  dims.push_back(
      {"warmup_steps",
       "",
       ValueKind::integer,
       {std::to_string(d.warmup_steps)},
       int_at_least("warmup_steps", 0),
       [](TrainConfig& c, const DimValue& v) { c.warmup_steps = static_cast<int>(v.integer); }});
  dims.push_back(
      {"steps",
       "",
       ValueKind::integer,
       {std::to_string(d.steps)},
       int_at_least("steps", 1),
       [](TrainConfig& c, const DimValue& v) { c.steps = static_cast<int>(v.integer); }});
  dims.push_back({"eval_samples",
                  "",
                  ValueKind::integer,
                  {std::to_string(d.eval_samples)},
                  at_least("eval_samples", 0),
                  [](TrainConfig& c, const DimValue& v) { c.eval_samples = v.integer; }});
  // The names of the cost model: "sgd" is plain SGD, as in every subcommand.
  dims.push_back({"optimizer",
                  "optimizers",
                  ValueKind::string,
                  {placement::to_string(d.optimizer)},
                  [](const DimValue& v) { placement::optimizer_by_name(v.text); },
                  [](TrainConfig& c, const DimValue& v) {
                    c.optimizer = placement::optimizer_by_name(v.text);
                  }});
  dims.push_back({"learning_rate",
                  "learning_rates",
                  ValueKind::number,
                  {number_text(d.learning_rate)},
                  finite_number("learning_rate", false),
                  [](TrainConfig& c, const DimValue& v) { c.learning_rate = v.number; }});
  // The recipe (recipe.hpp, docs/cli.md "Training recipe"); lists are one string each
  // ("91,136,182"), since a TOML array is a list of values to sweep over.
  dims.push_back({"lr_schedule",
                  "lr_schedules",
                  ValueKind::string,
                  {to_string(d.lr_schedule.kind)},
                  [](const DimValue& v) { lr_schedule_by_name(v.text); },
                  [](TrainConfig& c, const DimValue& v) {
                    c.lr_schedule.kind = lr_schedule_by_name(v.text);
                  }});
  dims.push_back({"lr_milestones",
                  "",
                  ValueKind::string,
                  {""},
                  [](const DimValue& v) { parse_number_list("lr_milestones", v.text); },
                  [](TrainConfig& c, const DimValue& v) {
                    c.lr_schedule.milestones = parse_number_list("lr_milestones", v.text);
                  }});
  dims.push_back({"lr_milestone_unit",
                  "",
                  ValueKind::string,
                  {to_string(d.lr_schedule.unit)},
                  [](const DimValue& v) { milestone_unit_by_name(v.text); },
                  [](TrainConfig& c, const DimValue& v) {
                    c.lr_schedule.unit = milestone_unit_by_name(v.text);
                  }});
  dims.push_back({"lr_decay",
                  "",
                  ValueKind::number,
                  {number_text(d.lr_schedule.decay)},
                  [](const DimValue& v) {
                    if (!(v.number > 0.0 && v.number <= 1.0)) {
                      throw_invalid("lr_decay must be in (0, 1], got " + v.text);
                    }
                  },
                  [](TrainConfig& c, const DimValue& v) { c.lr_schedule.decay = v.number; }});
  dims.push_back({"warmup_lr_steps",
                  "",
                  ValueKind::integer,
                  {std::to_string(d.lr_schedule.warmup_steps)},
                  int_at_least("warmup_lr_steps", 0),
                  [](TrainConfig& c, const DimValue& v) {
                    c.lr_schedule.warmup_steps = static_cast<int>(v.integer);
                  }});
  dims.push_back({"epochs",
                  "",
                  ValueKind::number,
                  {number_text(d.epochs)},
                  finite_number("epochs", true),
                  [](TrainConfig& c, const DimValue& v) { c.epochs = v.number; }});
  dims.push_back({"eval_epochs",
                  "",
                  ValueKind::string,
                  {""},
                  [](const DimValue& v) { parse_number_list("eval_epochs", v.text); },
                  [](TrainConfig& c, const DimValue& v) {
                    c.eval_epochs = parse_number_list("eval_epochs", v.text);
                  }});
  dims.push_back({"eval_epoch_samples",
                  "",
                  ValueKind::integer,
                  {std::to_string(d.eval_epoch_samples)},
                  int_at_least("eval_epoch_samples", 0),
                  [](TrainConfig& c, const DimValue& v) { c.eval_epoch_samples = v.integer; }});
  dims.push_back({"train_samples",
                  "",
                  ValueKind::integer,
                  {std::to_string(d.train_samples)},
                  int_at_least("train_samples", 0),
                  [](TrainConfig& c, const DimValue& v) { c.train_samples = v.integer; }});
  dims.push_back({"weight_decay_all",
                  "",
                  ValueKind::integer,
                  {d.weight_decay_all ? "1" : "0"},
                  [](const DimValue& v) {
                    if (v.integer != 0 && v.integer != 1) {
                      throw_invalid("weight_decay_all is 0 or 1, got " + v.text);
                    }
                  },
                  [](TrainConfig& c, const DimValue& v) { c.weight_decay_all = v.integer == 1; }});
  dims.push_back({"aux_head",
                  "",
                  ValueKind::string,
                  {to_string(d.aux_head)},
                  [](const DimValue& v) { placement::aux_head_width_by_name(v.text); },
                  [](TrainConfig& c, const DimValue& v) {
                    c.aux_head = placement::aux_head_width_by_name(v.text);
                  }});
  // The older spelling of aux_head = "capped" (a spec may not give both: spec_parse.cpp);
  // applied after aux_head, and 0 leaves it as it is.
  dims.push_back({"aux_head_capped",
                  "",
                  ValueKind::integer,
                  {"0"},
                  [](const DimValue& v) {
                    if (v.integer != 0 && v.integer != 1) {
                      throw_invalid("aux_head_capped is 0 or 1, got " + v.text);
                    }
                  },
                  [](TrainConfig& c, const DimValue& v) {
                    if (v.integer == 1) c.aux_head = placement::AuxHeadWidth::capped;
                  }});
  dims.push_back(
      {"augmentation",
       "augmentations",
       ValueKind::string,
       {to_string(d.augmentation)},
       [](const DimValue& v) { augmentation_by_name(v.text); },
       [](TrainConfig& c, const DimValue& v) { c.augmentation = augmentation_by_name(v.text); }});
  // Not a dimension of the question (not in the configuration id): how long a rank may
  // wait for another before the configuration fails (TrainConfig::watchdog_s).
  dims.push_back({"watchdog_s",
                  "",
                  ValueKind::number,
                  {number_text(d.watchdog_s)},
                  finite_number("watchdog_s", false, " of seconds"),
                  [](TrainConfig& c, const DimValue& v) { c.watchdog_s = v.number; }});
  // Not in the configuration id either: how long a configuration's steps may take
  // (TrainConfig::time_limit_s; 0: no limit), so one slow configuration cannot use up a job.
  dims.push_back({"time_limit_s",
                  "",
                  ValueKind::number,
                  {number_text(d.time_limit_s)},
                  finite_number("time_limit_s", true, " of seconds"),
                  [](TrainConfig& c, const DimValue& v) { c.time_limit_s = v.number; }});
  // CPU threads per rank (0: the node's cores over the configuration's ranks on the node).
  // Fixed, it makes configurations of different K compute in the same summation order:
  // oneDNN's result depends on the thread count, and a chain of training steps amplifies
  // the last bits (cross-node test: 1 and 2 threads 4e-5 apart after 3 steps).
  dims.push_back({"threads_per_rank",
                  "",
                  ValueKind::integer,
                  {std::to_string(d.threads_per_rank)},
                  int_at_least("threads_per_rank", 0),
                  [](TrainConfig& c, const DimValue& v) {
                    c.threads_per_rank = static_cast<int>(v.integer);
                  }});
  dims.push_back({"weight_decay",
                  "",
                  ValueKind::number,
                  {number_text(d.weight_decay)},
                  finite_number("weight_decay", true),
                  [](TrainConfig& c, const DimValue& v) { c.weight_decay = v.number; }});
  dims.push_back(
      {"seed",
       "seeds",
       ValueKind::integer,
       {std::to_string(d.seed)},
       at_least("seed", 0),
       [](TrainConfig& c, const DimValue& v) { c.seed = static_cast<uint64_t>(v.integer); }});
  dims.push_back(text_dim(
      "device", "", d.device,
      [](const DimValue& v) {
        require_name("device", v.text, {"cpu", "cuda"});
      },
      &TrainConfig::device));
  dims.push_back({"cost_device",
                  "",
                  ValueKind::string,
                  {d.cost_device},
                  [](const DimValue& v) {
                    if (v.text.starts_with("profile:")) {
                      if (v.text.size() == 8) throw_invalid("cost_device 'profile:' needs a path");
                      return;
                    }
                    placement::device_preset_by_name(v.text);
                  },
                  [](TrainConfig& c, const DimValue& v) {
                    if (v.text.starts_with("profile:")) {
                      c.profile_path = v.text.substr(8);
                    } else {
                      c.cost_device = v.text;
                    }
                  }});
  return dims;
}

}  // namespace

std::string number_text(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

const std::vector<Dimension>& dimensions() {
  static const std::vector<Dimension> dims = make_dimensions();
  return dims;
}

}  // namespace interplace::runs::sweep
