// The configuration's schema (config_fields.hpp): one row per key.
#include "interplace/runs/config_fields.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

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
  // train's flag of the key is made by hand (cmd_train.cpp, the shared option helpers).
  Row& hand_flag(std::string name) {
    f.hand_flag = std::move(name);
    return *this;
  }
  // A spec key that no flag of train sets, and why.
  Row& spec_only(std::string why) {
    f.spec_only = std::move(why);
    return *this;
  }
  // A line of the id, always (its place: kIdOrder).
  Row& id() { return *this; }
  // The line only where `present` holds; files then hold the attribute always unless
  // file_as_id() says otherwise.
  Row& id_when(std::function<bool(const TrainConfig&)> present) {
    f.in_id = Presence::when;
    f.id_present = std::move(present);
    return *this;
  }
  // The line only where the value differs from the default (keys added after files
  // existed: older ids stay as they were).
  Row& id_unless_default() {
    const std::function<FieldValue(const TrainConfig&)> get = f.get;
    const std::string fallback = f.get(TrainConfig{}).text;
    return id_when([get, fallback](const TrainConfig& c) { return get(c).text != fallback; });
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

// The edit distance of two short names (for the HINT of an unknown one).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The registry's message for a value outside the set (it lists the valid names) with a
// HINT: the closest name, or where every key's values are listed.
std::string with_hint(const std::string& message, const std::string& value,
                      const std::vector<std::string>& names) {
  if (message.find("HINT:") != std::string::npos) return message;
  const std::string* closest = nullptr;
  size_t best = 3;  // at most 2 edits, and fewer than the value's length
  for (const std::string& name : names) {
    const size_t d = edit_distance(value, name);
    if (d < best && d < value.size()) {
      best = d;
      closest = &name;
    }
  }
  return message + (closest != nullptr ? ". HINT: did you mean '" + *closest + "'?"
                                       : ". HINT: `interplace schema` lists the values of "
                                         "every key");
}

// A name from a closed set, kept in the config as a typed value (parsed once, here):
// `of(config)` is the member, `parse` the set's parser (throws invalid_input listing the
// valid names), `names` the registry's names (the row's values); its text is the value's
// to_string.
template <typename Of, typename Parse>
Row choice_row(std::string key, Of of, Parse parse,
               std::function<std::vector<std::string>()> names) {
  Row r = row(
      std::move(key), ValueKind::string,
      [of](const TrainConfig& c) { return text_value(std::string(to_string(of(c)))); },
      [parse, names](const FieldValue& v) {
        try {
          parse(v.text);
        } catch (const Error& e) {
          throw_invalid(with_hint(e.what(), v.text, names()));
        }
      },
      [of, parse](TrainConfig& c, const FieldValue& v) { of(c) = parse(v.text); });
  r.f.values = std::move(names);
  return r;
}

// A set's value parsed from its name by the type's constructor (config_choices.hpp).
template <typename T>
T parsed(const std::string& name) {
  return T(name);
}

// strategy_reach's forms; a name as to_string writes it ("nwise:3", not "nwise:03"), so
// that one strategy has one id.
placement::Strategy strategy_by_name(const std::string& name) {
  const placement::Strategy strategy(name);
  if (to_string(strategy) != name) {
    throw_invalid("strategy '" + name + "' is written '" + to_string(strategy) +
                  "'. HINT: strategy = \"" + to_string(strategy) + "\"");
  }
  return strategy;
}

// The configuration id's lines in order: a key's place never changes (every file's ids
// depend on it) and keys added later come last. id_rank is the place in this list.
constexpr const char* kIdOrder[] = {"model",
                                    "order",
                                    "placer",
                                    "devices",
                                    "strategy",
                                    "pipeline",
                                    "interlock_mode",
                                    "micro_batches",
                                    "batch_size",
                                    "warmup_steps",
                                    "steps",
                                    "dataset",
                                    "eval_samples",
                                    "optimizer",
                                    "learning_rate",
                                    "weight_decay",
                                    "seed",
                                    "device",
                                    "cost_device",
                                    "model_options",
                                    "data_dir",
                                    "lr_schedule",
                                    "lr_milestones",
                                    "lr_milestone_unit",
                                    "lr_decay",
                                    "warmup_lr_steps",
                                    "epochs",
                                    "eval_epochs",
                                    "eval_epoch_samples",
                                    "train_samples",
                                    "augmentation",
                                    "aux_head_capped",
                                    "aux_head",
                                    "weight_decay_all",
                                    "threads_per_rank",
                                    "graph_file",
                                    "graph_digest",
                                    "virtual_stages",
                                    "data_parallel",
                                    "validation_fraction",
                                    "rl_preset",
                                    "simulate_only",
                                    "runtime"};

// Each row of the id gets its place in kIdOrder; a row of the id missing there, a listed
// key without a row of the id, or a key listed twice is a programming error, refused on
// first use (and by the tests).
void assign_id_ranks(std::vector<ConfigField>& fields) {
  std::map<std::string, int> rank;
  for (const char* key : kIdOrder) {
    if (!rank.emplace(key, static_cast<int>(rank.size()) + 1).second) {
      throw_runtime(std::string("config_fields: ") + key + " is listed twice in kIdOrder");
    }
  }
  size_t placed = 0;
  for (ConfigField& f : fields) {
    if (f.in_id == Presence::never) continue;
    const auto at = rank.find(f.key);
    if (at == rank.end()) throw_runtime("config_fields: " + f.key + " has no place in kIdOrder");
    f.id_rank = at->second;
    ++placed;
  }
  if (placed != rank.size()) {
    throw_runtime("config_fields: kIdOrder lists a key that is no row of the id");
  }
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
                     .hand_flag("--model")
                     .id());
  // A graph file's network instead of `model` (docs/your-network.md); "" is none. The file is
  // read and checked here, so a bad one is a spec error with its line.
  rows.push_back(text_row("graph_file", &TrainConfig::graph_file,
                          [](const FieldValue& v) {
                            if (!v.text.empty()) placement::read_graph_file(v.text);
                          })
                     .alias("graph_files")
                     .hand_flag("--graph-file")
                     .id_unless_default()
                     .file_as_id());
  rows.push_back(choice_row(
                     "dataset", [](auto& c) -> auto& { return c.dataset; }, parsed<DatasetChoice>,
                     dataset_names)
                     .alias("datasets")
                     .flag("--dataset", "data set: " + join_names(dataset_names()))
                     .id());
  rows.push_back(text_row("data_dir", &TrainConfig::data_dir, no_check)
                     .flag("--data-dir", "data set directory (default: its Debian location)")
                     .id());
  rows.push_back(integer_row("devices", &TrainConfig::devices, 1).hand_flag("--devices").id());
  rows.push_back(choice_row(
                     "order", [](auto& c) -> auto& { return c.order; }, parsed<OrderChoice>,
                     OrderChoice::names)
                     .alias("orders")
                     .flag("--order", "traversal order: " + join_names(placement::order_names()))
                     .id());
  rows.push_back(choice_row(
                     "placer", [](auto& c) -> auto& { return c.placer; }, parsed<PlacerChoice>,
                     PlacerChoice::names)
                     .alias("placers")
                     .flag("--placer", "placer: " + join_names(placement::placer_names()))
                     .id());
  rows.push_back(choice_row(
                     "rl_preset", [](auto& c) -> auto& { return c.rl_preset; },
                     placement::rl_preset_by_name, [] { return placement::rl_preset_names(); })
                     .alias("rl_presets")
                     .flag("--rl-preset", "the rl placer's settings (docs/placers.md#rl): " +
                                              join_names(placement::rl_preset_names()))
                     .id_unless_default()
                     .file_as_id());
  rows.push_back(row(
                     "simulate_only", ValueKind::integer,
                     [](const TrainConfig& c) { return integer_value(c.simulate_only ? 1 : 0); },
                     int_in("simulate_only", 0, 1),
                     [](TrainConfig& c, const FieldValue& v) { c.simulate_only = v.integer == 1; })
                     .spec_only("train trains; `interplace simulate` plans and simulates one "
                                "configuration without training")
                     .id_unless_default()
                     .file_as_id());
  rows.push_back(choice_row(
                     "strategy", [](auto& c) -> auto& { return c.strategy; }, strategy_by_name,
                     [] { return placement::strategy_forms(); })
                     .alias("strategies")
                     .flag("--strategy", "backprop strategy: " +
                                             join_names(placement::strategy_forms()) + " (N >= 1)")
                     .id());
  // The registry's pipelines and e2e, no pipeline (config_choices.hpp).
  rows.push_back(
      choice_row(
          "pipeline", [](auto& c) -> auto& { return c.pipeline; }, parsed<TrainPipeline>,
          train_pipeline_names)
          .alias("pipelines")
          .flag("--pipeline",
                "schedule of the global strategy: " + join_names(train_pipeline_names()) + " (" +
                    std::string(kEndToEndName) + ": one unpipelined pass, M = 1)")
          .id());
  rows.push_back(choice_row(
                     "interlock_mode", [](auto& c) -> auto& { return c.interlock_mode; },
                     parsed<InterlockChoice>, InterlockChoice::names)
                     .alias("interlock_modes")
                     .flag("--interlock-mode", "interlocking gradients: " +
                                                   join_names(placement::interlock_mode_names()))
                     .id());
  rows.push_back(integer_row("virtual_stages", &TrainConfig::virtual_stages, 1)
                     .checked(int_in("virtual_stages", 1, placement::kMaxVirtualStages))
                     .flag("--virtual-stages",
                           "interleaved-1f1b, looped-bfs: model chunks per device, V (the "
                           "placer cuts devices x V stages, stage s on rank s mod devices)")
                     .id_unless_default()
                     .file_as_id());
  rows.push_back(
      integer_row("data_parallel", &TrainConfig::data_parallel, 1)
          .checked(int_in("data_parallel", 1, kMaxDataParallel, " (replicas of the pipeline)"))
          .hand_flag("--data-parallel")
          .id_unless_default()
          .file_as_id());
  rows.push_back(integer_row("micro_batches", &TrainConfig::micro_batches, 1)
                     .hand_flag("--micro-batches")
                     .id());
  rows.push_back(integer_row("batch_size", &TrainConfig::batch_size, 1)
                     .alias("batch_sizes")
                     .hand_flag("--batch-size")
                     .id());
  rows.push_back(integer_row("warmup_steps", &TrainConfig::warmup_steps, 0)
                     .flag("--warmup-steps", "warm-up steps (recorded, flagged)")
                     .id());
  rows.push_back(
      integer_row("steps", &TrainConfig::steps, 1).flag("--steps", "measured steps").id());
  rows.push_back(integer_row("eval_samples", &TrainConfig::eval_samples, 0)
                     .flag("--eval-samples", "test samples evaluated at the end")
                     .id()
                     .stored_as("eval_samples_requested"));
  // The names of the cost model: "sgd" is plain SGD, as in every subcommand (the flag is
  // add_optimizer_option's, shared with place and simulate).
  rows.push_back(choice_row(
                     "optimizer", [](auto& c) -> auto& { return c.optimizer; },
                     placement::optimizer_by_name, [] { return placement::optimizer_names(); })
                     .alias("optimizers")
                     .hand_flag("--optimizer")
                     .id());
  rows.push_back(number_row("learning_rate", &TrainConfig::learning_rate, false)
                     .alias("learning_rates")
                     .flag("--learning-rate", "learning rate")
                     .id());
  // The recipe (recipe.hpp, docs/cli.md "Training recipe").
  rows.push_back(
      choice_row(
          "lr_schedule", [](auto& c) -> auto& { return c.lr_schedule.kind; }, lr_schedule_by_name,
          lr_schedule_names)
          .alias("lr_schedules")
          .flag("--lr-schedule", "learning-rate schedule: " + join_names(lr_schedule_names()))
          .id_when(recipe_in_id));
  rows.push_back(number_list_row(
                     "lr_milestones", [](auto& c) -> auto& { return c.lr_schedule.milestones; })
                     .flag("--lr-milestones",
                           "step schedule: where the rate is multiplied by --lr-decay "
                           "(\"91,136,182\")")
                     .id_when(recipe_in_id));
  rows.push_back(choice_row(
                     "lr_milestone_unit", [](auto& c) -> auto& { return c.lr_schedule.unit; },
                     milestone_unit_by_name, milestone_unit_names)
                     .flag("--lr-milestone-unit", "unit of --lr-milestones: steps, epochs")
                     .id_when(recipe_in_id));
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
                     .id_when(recipe_in_id));
  rows.push_back(row(
                     "warmup_lr_steps", ValueKind::integer,
                     [](const TrainConfig& c) { return integer_value(c.lr_schedule.warmup_steps); },
                     int_at_least("warmup_lr_steps", 0),
                     [](TrainConfig& c, const FieldValue& v) {
                       c.lr_schedule.warmup_steps = static_cast<int>(v.integer);
                     })
                     .flag("--warmup-lr-steps",
                           "linear learning-rate warm-up over the first N steps (0: none)")
                     .id_when(recipe_in_id));
  rows.push_back(number_row("epochs", &TrainConfig::epochs, true)
                     .flag("--epochs",
                           "run length in epochs of the training split (replaces --steps: steps "
                           "= ceil(E * floor(train size / B)) - warm-up steps)")
                     .id_unless_default());
  rows.push_back(
      number_list_row(
          "eval_epochs", [](auto& c) -> auto& { return c.eval_epochs; })
          .flag("--eval-epochs", "evaluate the whole test split after these epochs (\"1,2,5\")")
          .id_unless_default());
  rows.push_back(integer_row("eval_epoch_samples", &TrainConfig::eval_epoch_samples, 0)
                     .checked(int_at_least("eval_epoch_samples", 0))
                     .flag("--eval-epoch-samples",
                           "evaluate only the first N test samples at --eval-epochs (0: the "
                           "whole test split)")
                     .id_unless_default());
  rows.push_back(integer_row("train_samples", &TrainConfig::train_samples, 0)
                     .checked(int_at_least("train_samples", 0))
                     .flag("--train-samples",
                           "train on the first N training samples only, reshuffled each epoch; "
                           "epochs count in them (0: the whole split; fashion-mnist)")
                     .id_unless_default());
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
                     .id_unless_default());
  rows.push_back(
      row(
          "weight_decay_all", ValueKind::integer,
          [](const TrainConfig& c) { return integer_value(c.weight_decay_all ? 1 : 0); },
          int_in("weight_decay_all", 0, 1),
          [](TrainConfig& c, const FieldValue& v) { c.weight_decay_all = v.integer == 1; })
          .switch_flag("--weight-decay-all",
                       "weight decay on every parameter (biases, norm parameters), as the "
                       "study's SGD; default: convolution and linear weights only")
          .id_unless_default());
  // The flags are add_aux_head_options', shared with simulate. The capped width kept the
  // id line it had before the widths had names (aux_head_capped = 1), so only
  // `proportional` writes an aux_head line.
  rows.push_back(choice_row(
                     "aux_head", [](auto& c) -> auto& { return c.aux_head; },
                     placement::aux_head_width_by_name,
                     [] { return placement::aux_head_width_names(); })
                     .hand_flag("--aux-head")
                     .id_when([](const TrainConfig& c) {
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
                     .hand_flag("--aux-head-capped")
                     .id_unless_default());
  rows.push_back(
      choice_row(
          "augmentation", [](auto& c) -> auto& { return c.augmentation; }, augmentation_by_name,
          [] { return augmentation_names(); })
          .alias("augmentations")
          .flag("--augmentation", "training-batch augmentation of image data: none, crop-flip")
          .id_unless_default());
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
                     .id_unless_default());
  rows.push_back(number_row("weight_decay", &TrainConfig::weight_decay, true)
                     .flag("--weight-decay", "weight decay")
                     .id());
  // The flag is add_seed_option's (every subcommand's seed).
  rows.push_back(
      integer_row("seed", &TrainConfig::seed, 0).alias("seeds").hand_flag("--seed").id());
  rows.push_back(
      choice_row(
          "device", [](auto& c) -> auto& { return c.device; }, parsed<DeviceChoice>,
          DeviceChoice::names)
          .flag("--device", "device each rank computes on: " + join_names(device_names()))
          .id());
  rows.push_back(
      choice_row(
          "runtime", [](auto& c) -> auto& { return c.runtime; }, parsed<RuntimeChoice>,
          RuntimeChoice::names)
          .flag("--runtime",
                "what runs the training steps: native (interplace's kernels) or torch (PyTorch "
                "runs the stages of the imported module, graph files of a PyTorch import)")
          .id_unless_default()
          .file_as_id());
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
                     .id());
  // Derived rows, without `set`: in the id and the file, set through other keys (the
  // spec's [model_options] and train's model flags; resolve_graph_file's digest of the
  // graph file's bytes).
  rows.push_back(
      row(
          "model_options", ValueKind::string,
          [](const TrainConfig& c) { return text_value(model_options_string(c.model_options)); },
          no_check, nullptr)
          .id());
  rows.push_back(row(
                     "graph_digest", ValueKind::string,
                     [](const TrainConfig& c) { return text_value(c.graph_digest); }, no_check,
                     nullptr)
                     .id_unless_default()
                     .file_as_id());
  std::vector<ConfigField> out;
  for (Row& r : rows) out.push_back(std::move(r.f));
  assign_id_ranks(out);
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
