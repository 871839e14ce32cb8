// The configuration's schema (config_fields.hpp): one row per key.
#include "interplace/runs/config_fields.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/aux_heads.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/name_choices.hpp"

namespace interplace::runs {
namespace {

using Check = std::function<void(const FieldValue&)>;

void no_check(const FieldValue&) {}

Check at_least(const std::string& key, int64_t minimum) {
  return [key, minimum](const FieldValue& v) {
    if (v.integer < minimum) {
      throw_invalid(key + " must be >= " + std::to_string(minimum) + ", got " + v.text);
    }
  };
}

// Counts the runtime keeps in an int.
Check int_at_least(const std::string& key, int64_t minimum) {
  return [key, minimum](const FieldValue& v) {
    at_least(key, minimum)(v);
    if (v.integer > 1'000'000'000) throw_invalid(key + " is too large: " + v.text);
  };
}

// Real numbers: finite, and > 0 or >= 0; `unit` goes into the message (" of seconds").
Check finite_number(const std::string& key, bool zero_allowed, const std::string& unit = "") {
  return [key, zero_allowed, unit](const FieldValue& v) {
    if (!std::isfinite(v.number) || v.number < 0.0 || (!zero_allowed && v.number == 0.0)) {
      throw_invalid(key + " must be a finite number" + unit + (zero_allowed ? " >= 0" : " > 0") +
                    ", got " + v.text);
    }
  };
}

Check int_in(const std::string& key, int64_t lo, int64_t hi, const std::string& note = "") {
  return [key, lo, hi, note](const FieldValue& v) {
    if (v.integer < lo || v.integer > hi) {
      throw_invalid(key + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + note +
                    ", got " + v.text);
    }
  };
}

FieldValue text_value(std::string text) {
  return {std::move(text), 0, 0.0};
}
FieldValue integer_value(int64_t value) {
  return {std::to_string(value), value, 0.0};
}
FieldValue number_value(double value) {
  return {number_text(value), 0, value};
}

// A row under construction: the builders fill key, kind, get and set; the chained calls
// add the flag, the id line and the attribute.
struct Row {
  ConfigField f;

  Row& alias(std::string plural) {
    f.plural = std::move(plural);
    return *this;
  }
  Row& flag(std::string name, std::string help) {
    f.flag = std::move(name);
    f.help = std::move(help);
    return *this;
  }
  Row& switch_flag(std::string name, std::string help) {
    f.switch_flag = true;
    return flag(std::move(name), std::move(help));
  }
  Row& id(int rank) {
    f.id_rank = rank;
    return *this;
  }
  // The line only where `present` holds; files then hold the attribute always unless
  // file_as_id() says otherwise.
  Row& id_when(int rank, std::function<bool(const TrainConfig&)> present) {
    f.in_id = Presence::when;
    f.id_present = std::move(present);
    return id(rank);
  }
  // The line only where the value differs from the default (keys added after files
  // existed: older ids stay as they were).
  Row& id_unless_default(int rank) {
    const std::function<FieldValue(const TrainConfig&)> get = f.get;
    const std::string fallback = f.get(TrainConfig{}).text;
    return id_when(rank, [get, fallback](const TrainConfig& c) { return get(c).text != fallback; });
  }
  Row& not_in_id() {
    f.in_id = Presence::never;
    return *this;
  }
  // The name of the id line and of the attribute when it is not the spec key.
  Row& stored_as(const std::string& name) {
    f.id_name = f.attribute = name;
    return *this;
  }
  Row& file_as_id() {
    f.in_file = Presence::when;
    return *this;
  }
  Row& no_attribute() {
    f.in_file = Presence::never;
    return *this;
  }
  Row& checked(Check check) {
    f.check = std::move(check);
    return *this;
  }
};

Row row(std::string key, ValueKind kind, std::function<FieldValue(const TrainConfig&)> get,
        Check check, std::function<void(TrainConfig&, const FieldValue&)> set) {
  Row r;
  r.f.key = std::move(key);
  r.f.kind = kind;
  r.f.get = std::move(get);
  r.f.check = std::move(check);
  r.f.set = std::move(set);
  return r;
}

Row text_row(std::string key, std::string TrainConfig::*member, Check check) {
  return row(
      std::move(key), ValueKind::string,
      [member](const TrainConfig& c) { return text_value(c.*member); }, std::move(check),
      [member](TrainConfig& c, const FieldValue& v) { c.*member = v.text; });
}

// A name from a fixed set, kept in the config as an enum (parsed once, here): `of(config)`
// is the member, `by_name` the enum's parser; its name is the enum's to_string.
template <typename Of, typename ByName>
Row named_row(std::string key, Of of, ByName by_name) {
  return row(
      std::move(key), ValueKind::string,
      [of](const TrainConfig& c) { return text_value(std::string(to_string(of(c)))); },
      [by_name](const FieldValue& v) { by_name(v.text); },
      [of, by_name](TrainConfig& c, const FieldValue& v) { of(c) = by_name(v.text); });
}

// An integer member (int, int64_t or uint64_t) at least `minimum`; ints are kept below 1e9.
template <typename Int>
Row integer_row(std::string key, Int TrainConfig::*member, int64_t minimum) {
  // The text in the member's own type: a seed above 2^63 keeps its decimal (and its id).
  Check check = std::is_same_v<Int, int> ? int_at_least(key, minimum) : at_least(key, minimum);
  if (std::is_unsigned_v<Int>) {
    check = [key](const FieldValue& v) {
      if (v.text.starts_with("-")) throw_invalid(key + " must be >= 0, got " + v.text);
    };
  }
  return row(
      key, ValueKind::integer,
      [member](const TrainConfig& c) {
        return FieldValue{std::to_string(c.*member), static_cast<int64_t>(c.*member), 0.0};
      },
      std::move(check),
      [member](TrainConfig& c, const FieldValue& v) { c.*member = static_cast<Int>(v.integer); });
}

Row number_row(std::string key, double TrainConfig::*member, bool zero_allowed,
               const std::string& unit = "") {
  return row(
      key, ValueKind::number, [member](const TrainConfig& c) { return number_value(c.*member); },
      finite_number(key, zero_allowed, unit),
      [member](TrainConfig& c, const FieldValue& v) { c.*member = v.number; });
}

// A list of numbers kept as one string ("91,136,182"): a TOML array is a list to sweep.
// `list_of(config)` is the list's member, for a const and a mutable config alike.
template <typename ListOf>
Row number_list_row(std::string key, ListOf list_of) {
  return row(
      key, ValueKind::string,
      [list_of](const TrainConfig& c) { return text_value(number_list_text(list_of(c))); },
      [key](const FieldValue& v) { parse_number_list(key, v.text); },
      [key, list_of](TrainConfig& c, const FieldValue& v) {
        list_of(c) = parse_number_list(key, v.text);
      });
}

// The recipe's five lines enter the id together, when the schedule is not the constant
// default (docs/results-format.md).
bool recipe_in_id(const TrainConfig& c) {
  return !c.lr_schedule.is_default() || !c.lr_schedule.milestones.empty();
}

std::vector<ConfigField> make_fields() {
  std::vector<Row> rows;
  // A seeded family's set ("enas-cnn:0..31") stands for its members: the spec parser
  // expands it; every member is checked here.
  rows.push_back(text_row("model", &TrainConfig::model,
                          [](const FieldValue& v) { placement::expand_model_names(v.text); })
                     .alias("models")
                     .id(1));
  // A graph file's network instead of `model` (docs/your-network.md); "" is none. The file is
  // read and checked here, so a bad one is a spec error with its line.
  rows.push_back(text_row("graph_file", &TrainConfig::graph_file,
                          [](const FieldValue& v) {
                            if (!v.text.empty()) placement::read_graph_file(v.text);
                          })
                     .alias("graph_files")
                     .id_unless_default(36)
                     .file_as_id());
  rows.push_back(
      text_row("dataset", &TrainConfig::dataset,
               [](const FieldValue& v) { require_name("dataset", v.text, dataset_names()); })
          .alias("datasets")
          .flag("--dataset", "data set: " + join_names(dataset_names()))
          .id(12));
  rows.push_back(text_row("data_dir", &TrainConfig::data_dir, no_check)
                     .flag("--data-dir", "data set directory (default: its Debian location)")
                     .id(21));
  rows.push_back(integer_row("devices", &TrainConfig::devices, 1).id(4));
  rows.push_back(text_row("order", &TrainConfig::order,
                          [](const FieldValue& v) { placement::order_by_name(v.text); })
                     .alias("orders")
                     .flag("--order", "traversal order: " + join_names(placement::order_names()))
                     .id(2));
  rows.push_back(text_row("placer", &TrainConfig::placer,
                          [](const FieldValue& v) { placement::placer_by_name(v.text); })
                     .alias("placers")
                     .flag("--placer", "placer: " + join_names(placement::placer_names()))
                     .id(3));
  rows.push_back(
      named_row(
          "rl_preset", [](auto& c) -> auto& { return c.rl_preset; }, placement::rl_preset_by_name)
          .alias("rl_presets")
          .id_unless_default(41)
          .file_as_id());
  rows.push_back(row(
                     "simulate_only", ValueKind::integer,
                     [](const TrainConfig& c) { return integer_value(c.simulate_only ? 1 : 0); },
                     int_in("simulate_only", 0, 1),
                     [](TrainConfig& c, const FieldValue& v) { c.simulate_only = v.integer == 1; })
                     .id_unless_default(42)
                     .file_as_id());
  rows.push_back(text_row("strategy", &TrainConfig::strategy,
                          [](const FieldValue& v) { placement::strategy_reach(v.text, 1 << 20); })
                     .alias("strategies")
                     .flag("--strategy", "backprop strategy: " +
                                             join_names(placement::strategy_forms()) + " (N >= 1)")
                     .id(5));
  rows.push_back(text_row("pipeline", &TrainConfig::pipeline,
                          [](const FieldValue& v) {
                            require_name("pipeline", v.text, train_pipeline_names());
                          })
                     .alias("pipelines")
                     .flag("--pipeline", "schedule of the global strategy: " +
                                             join_names(train_pipeline_names()) +
                                             " (e2e: one unpipelined pass, M = 1)")
                     .id(6));
  rows.push_back(text_row("interlock_mode", &TrainConfig::interlock_mode,
                          [](const FieldValue& v) {
                            require_name("interlock_mode", v.text,
                                         placement::interlock_mode_names());
                          })
                     .alias("interlock_modes")
                     .flag("--interlock-mode", "interlocking gradients: " +
                                                   join_names(placement::interlock_mode_names()))
                     .id(7));
  rows.push_back(integer_row("virtual_stages", &TrainConfig::virtual_stages, 1)
                     .checked(int_in("virtual_stages", 1, placement::kMaxVirtualStages))
                     .flag("--virtual-stages",
                           "interleaved-1f1b, looped-bfs: model chunks per device, V (the "
                           "placer cuts devices x V stages, stage s on rank s mod devices)")
                     .id_unless_default(38)
                     .file_as_id());
  rows.push_back(
      integer_row("data_parallel", &TrainConfig::data_parallel, 1)
          .checked(int_in("data_parallel", 1, kMaxDataParallel, " (replicas of the pipeline)"))
          .id_unless_default(39)
          .file_as_id());
  rows.push_back(integer_row("micro_batches", &TrainConfig::micro_batches, 1).id(8));
  rows.push_back(integer_row("batch_size", &TrainConfig::batch_size, 1).alias("batch_sizes").id(9));
  rows.push_back(integer_row("warmup_steps", &TrainConfig::warmup_steps, 0)
                     .flag("--warmup-steps", "warm-up steps (recorded, flagged)")
                     .id(10));
  rows.push_back(
      integer_row("steps", &TrainConfig::steps, 1).flag("--steps", "measured steps").id(11));
  rows.push_back(integer_row("eval_samples", &TrainConfig::eval_samples, 0)
                     .flag("--eval-samples", "test samples evaluated at the end")
                     .id(13)
                     .stored_as("eval_samples_requested"));
  // The names of the cost model: "sgd" is plain SGD, as in every subcommand (the flag is
  // add_optimizer_option's, shared with place and simulate).
  rows.push_back(
      named_row(
          "optimizer", [](auto& c) -> auto& { return c.optimizer; }, placement::optimizer_by_name)
          .alias("optimizers")
          .id(14));
  rows.push_back(number_row("learning_rate", &TrainConfig::learning_rate, false)
                     .alias("learning_rates")
                     .flag("--learning-rate", "learning rate")
                     .id(15));
  // The recipe (recipe.hpp, docs/cli.md "Training recipe").
  rows.push_back(
      named_row(
          "lr_schedule", [](auto& c) -> auto& { return c.lr_schedule.kind; }, lr_schedule_by_name)
          .alias("lr_schedules")
          .flag("--lr-schedule", "learning-rate schedule: " + join_names(lr_schedule_names()))
          .id_when(22, recipe_in_id));
  rows.push_back(number_list_row(
                     "lr_milestones", [](auto& c) -> auto& { return c.lr_schedule.milestones; })
                     .flag("--lr-milestones",
                           "step schedule: where the rate is multiplied by --lr-decay "
                           "(\"91,136,182\")")
                     .id_when(23, recipe_in_id));
  rows.push_back(named_row(
                     "lr_milestone_unit", [](auto& c) -> auto& { return c.lr_schedule.unit; },
                     milestone_unit_by_name)
                     .flag("--lr-milestone-unit", "unit of --lr-milestones: steps, epochs")
                     .id_when(24, recipe_in_id));
  rows.push_back(row(
                     "lr_decay", ValueKind::number,
                     [](const TrainConfig& c) { return number_value(c.lr_schedule.decay); },
                     [](const FieldValue& v) {
                       if (!(v.number > 0.0 && v.number <= 1.0)) {
                         throw_invalid("lr_decay must be in (0, 1], got " + v.text);
                       }
                     },
                     [](TrainConfig& c, const FieldValue& v) { c.lr_schedule.decay = v.number; })
                     .flag("--lr-decay", "factor per milestone")
                     .id_when(25, recipe_in_id));
  rows.push_back(row(
                     "warmup_lr_steps", ValueKind::integer,
                     [](const TrainConfig& c) { return integer_value(c.lr_schedule.warmup_steps); },
                     int_at_least("warmup_lr_steps", 0),
                     [](TrainConfig& c, const FieldValue& v) {
                       c.lr_schedule.warmup_steps = static_cast<int>(v.integer);
                     })
                     .flag("--warmup-lr-steps",
                           "linear learning-rate warm-up over the first N steps (0: none)")
                     .id_when(26, recipe_in_id));
  rows.push_back(number_row("epochs", &TrainConfig::epochs, true)
                     .flag("--epochs",
                           "run length in epochs of the training split (replaces --steps: steps "
                           "= ceil(E * floor(train size / B)) - warm-up steps)")
                     .id_unless_default(27));
  rows.push_back(
      number_list_row(
          "eval_epochs", [](auto& c) -> auto& { return c.eval_epochs; })
          .flag("--eval-epochs", "evaluate the whole test split after these epochs (\"1,2,5\")")
          .id_unless_default(28));
  rows.push_back(integer_row("eval_epoch_samples", &TrainConfig::eval_epoch_samples, 0)
                     .checked(int_at_least("eval_epoch_samples", 0))
                     .flag("--eval-epoch-samples",
                           "evaluate only the first N test samples at --eval-epochs (0: the "
                           "whole test split)")
                     .id_unless_default(29));
  rows.push_back(integer_row("train_samples", &TrainConfig::train_samples, 0)
                     .checked(int_at_least("train_samples", 0))
                     .flag("--train-samples",
                           "train on the first N training samples only, reshuffled each epoch; "
                           "epochs count in them (0: the whole split; fashion-mnist)")
                     .id_unless_default(30));
  rows.push_back(number_row("validation_fraction", &TrainConfig::validation_fraction, true)
                     .checked([](const FieldValue& v) {
                       if (!std::isfinite(v.number) || v.number < 0.0 || v.number > 0.5) {
                         throw_invalid("validation_fraction must be in [0, 0.5], got " + v.text);
                       }
                     })
                     .flag("--validation-fraction",
                           "hold out floor(N x F) training samples, the same for every run and "
                           "seed, and evaluate them at --eval-epochs beside the test split (0: "
                           "none; fashion-mnist)")
                     .id_unless_default(40));
  rows.push_back(
      row(
          "weight_decay_all", ValueKind::integer,
          [](const TrainConfig& c) { return integer_value(c.weight_decay_all ? 1 : 0); },
          int_in("weight_decay_all", 0, 1),
          [](TrainConfig& c, const FieldValue& v) { c.weight_decay_all = v.integer == 1; })
          .switch_flag("--weight-decay-all",
                       "weight decay on every parameter (biases, norm parameters), as the "
                       "study's SGD; default: convolution and linear weights only")
          .id_unless_default(34));
  // The flags are add_aux_head_options', shared with simulate. The capped width kept the
  // id line it had before the widths had names (aux_head_capped = 1), so only
  // `proportional` writes an aux_head line.
  rows.push_back(named_row(
                     "aux_head", [](auto& c) -> auto& { return c.aux_head; },
                     placement::aux_head_width_by_name)
                     .id_when(33, [](const TrainConfig& c) {
                       return c.aux_head == placement::AuxHeadWidth::proportional;
                     }));
  // The older spelling of aux_head = "capped" (a spec may not give both: spec_parse.cpp);
  // applied after aux_head, and 0 leaves it as it is.
  rows.push_back(row(
                     "aux_head_capped", ValueKind::integer,
                     [](const TrainConfig& c) {
                       return integer_value(c.aux_head == placement::AuxHeadWidth::capped);
                     },
                     int_in("aux_head_capped", 0, 1),
                     [](TrainConfig& c, const FieldValue& v) {
                       if (v.integer == 1) c.aux_head = placement::AuxHeadWidth::capped;
                     })
                     .id_unless_default(32));
  rows.push_back(
      named_row(
          "augmentation", [](auto& c) -> auto& { return c.augmentation; }, augmentation_by_name)
          .alias("augmentations")
          .flag("--augmentation", "training-batch augmentation of image data: none, crop-flip")
          .id_unless_default(31));
  // Not a dimension of the question (not in the id, no attribute): how long a rank may wait
  // for another before the configuration fails (TrainConfig::watchdog_s).
  rows.push_back(number_row("watchdog_s", &TrainConfig::watchdog_s, false, " of seconds")
                     .flag("--watchdog-s",
                           "seconds a rank may wait for another before the run fails (a stopped "
                           "or hung rank)")
                     .not_in_id()
                     .no_attribute());
  // Not in the id either: how long a configuration's steps may take (0: no limit), so one
  // slow configuration cannot use up a job.
  rows.push_back(number_row("time_limit_s", &TrainConfig::time_limit_s, true, " of seconds")
                     .flag("--time-limit-s",
                           "wall-clock seconds the steps may take; past it the run fails (0: "
                           "no limit)")
                     .not_in_id()
                     .no_attribute());
  // Fixed, it makes configurations of different K compute in the same summation order:
  // oneDNN's result depends on the thread count (docs/cli.md).
  rows.push_back(integer_row("threads_per_rank", &TrainConfig::threads_per_rank, 0)
                     .flag("--threads-per-rank",
                           "CPU threads per rank (0: cores on the node / ranks on the node)")
                     .id_unless_default(35));
  rows.push_back(number_row("weight_decay", &TrainConfig::weight_decay, true)
                     .flag("--weight-decay", "weight decay")
                     .id(16));
  // The flag is add_seed_option's (every subcommand's seed).
  rows.push_back(integer_row("seed", &TrainConfig::seed, 0).alias("seeds").id(17));
  rows.push_back(
      text_row("device", &TrainConfig::device,
               [](const FieldValue& v) { require_name("device", v.text, device_names()); })
          .flag("--device", "device each rank computes on: " + join_names(device_names()))
          .id(18));
  // A preset's name, or "profile:PATH" (the measured profile at PATH; train --profile).
  rows.push_back(row(
                     "cost_device", ValueKind::string,
                     [](const TrainConfig& c) { return text_value(cost_device_string(c)); },
                     [](const FieldValue& v) {
                       if (!v.text.starts_with("profile:")) {
                         placement::device_preset_by_name(v.text);
                       } else if (v.text.size() == 8) {
                         throw_invalid("cost_device 'profile:' needs a path");
                       }
                     },
                     [](TrainConfig& c, const FieldValue& v) {
                       if (v.text.starts_with("profile:")) {
                         c.profile_path = v.text.substr(8);
                       } else {
                         c.cost_device = v.text;
                       }
                     })
                     .flag("--cost-device", "device preset of the placer's cost model: " +
                                                join_names(placement::device_preset_names()) +
                                                ", or profile:PATH")
                     .id(19));
  // Derived rows, without `set`: in the id and the file, set through other keys (the
  // spec's [model_options] and train's model flags; resolve_graph_file's digest of the
  // graph file's bytes).
  rows.push_back(
      row(
          "model_options", ValueKind::string,
          [](const TrainConfig& c) { return text_value(model_options_string(c.model_options)); },
          no_check, nullptr)
          .id(20));
  rows.push_back(row(
                     "graph_digest", ValueKind::string,
                     [](const TrainConfig& c) { return text_value(c.graph_digest); }, no_check,
                     nullptr)
                     .id_unless_default(37)
                     .file_as_id());
  std::vector<ConfigField> out;
  for (Row& r : rows) out.push_back(std::move(r.f));
  return out;
}

// The whole of `text` as a T ("takes integers, got '2x'").
template <typename T>
T parse_whole(const std::string& key, const std::string& text, const char* what) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw_invalid(key + " takes " + what + ", got '" + text + "'");
  }
  return value;
}

}  // namespace

FieldValue ConfigField::default_value() const {
  return get(TrainConfig{});
}

void check_scalar_fields(const TrainConfig& config) {
  for (const ConfigField& f : settable_fields()) {
    if (f.kind != ValueKind::string) f.check(f.get(config));
  }
}

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = make_fields();
  return fields;
}

const std::vector<ConfigField>& settable_fields() {
  static const std::vector<ConfigField> fields = [] {
    std::vector<ConfigField> out;
    for (const ConfigField& f : config_fields()) {
      if (f.set) out.push_back(f);
    }
    return out;
  }();
  return fields;
}

int settable_index(const std::string& key) {
  const std::vector<ConfigField>& fields = settable_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].key == key || (!fields[i].plural.empty() && fields[i].plural == key)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

FieldValue parse_field_text(const ConfigField& field, const std::string& text) {
  FieldValue v;
  if (field.kind == ValueKind::integer) {
    v = integer_value(parse_whole<int64_t>(field.key, text, "integers"));
  } else if (field.kind == ValueKind::number) {
    v = number_value(parse_whole<double>(field.key, text, "numbers"));
  } else {
    v = text_value(text);
  }
  field.check(v);
  return v;
}

std::string id_text(const ConfigField& field, const FieldValue& value) {
  if (field.kind != ValueKind::number) return value.text;
  // printf's %.17g: exact, and the same text in every language that recomputes ids.
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value.number);
  return buffer;
}

std::string number_text(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace interplace::runs
