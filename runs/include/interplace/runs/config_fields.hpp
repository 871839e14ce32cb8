// The configuration's schema: one row per key of a TrainConfig that a sweep spec, `train`'s
// flags, the configuration id or a result file names. Every user reads the same row:
//   the spec parser     key, plural, kind, check, set (rows without `set` are not spec keys)
//   train's flags       flag, help, then the same parse, check and set as a spec value
//                       (or hand_flag: one train makes itself; spec_only: none, and why)
//   the id              id_rank orders the lines of canonical_parameters (the key's place
//                       in config_fields.cpp's kIdOrder), in_id says when a line is written
//                       (config_id.cpp; docs/results-format.md)
//   the result file     attribute (name, type from kind, when) written by results_writer
//   `interplace schema` all of it as JSON (schema_json), also a result file's root
//                       attribute `schema`, which the analysis reads
// Closed sets (order, placer, strategy, pipeline, ...) carry their registry's names in
// `values`; the TrainConfig keeps their typed value (config_choices.hpp), parsed once here.
// Adding a key is one row in config_fields.cpp (and the TrainConfig member it sets) and,
// when it enters the id, its name at the end of kIdOrder; a test checks that docs/cli.md
// and docs/results-format.md describe every row.
//
// Example, the row of `steps`:
//   key "steps", kind integer, flag "--steps", check ">= 1", id rank 11 (always),
//   attribute "steps" (int64, always): spec `steps = 5`, `train --steps 5`, the id line
//   "steps=5", the attribute steps = 5 all go through it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/runs/training.hpp"

namespace interplace::runs {

enum class ValueKind { string, integer, number };

// One value of a key: `text` is its canonical form (what exclusions compare; number_text
// for numbers, decimal for integers); `integer` or `number` by the key's kind.
struct FieldValue {
  std::string text;
  int64_t integer = 0;
  double number = 0.0;
};

// When a row writes its line of the id or its attribute.
enum class Presence {
  always,
  when,   // when `present(config)` holds (e.g. the value differs from its default)
  never,  // not in the id (how long to wait), or no attribute
};

struct ConfigField {
  std::string key;     // spec key and, unless `attribute` says otherwise, attribute name
  std::string plural;  // the spec's alias ("orders"; empty: none)
  ValueKind kind = ValueKind::string;
  std::string flag;          // train's flag made from the row ("--steps"); empty: none
  bool switch_flag = false;  // the flag takes no value and sets 1 (integer keys)
  std::string help;          // train --help
  std::string hand_flag;     // train's flag of the key made by hand (cmd_train: "--seed")
  std::string spec_only;     // a spec key no flag of train sets: why (empty: one does)
  // A closed set's names, from its registry (empty function: not a closed set). The
  // strategy's are its forms ("nwise:N").
  std::function<std::vector<std::string>()> values;
  // The value as set on `config` (canonical text included).
  std::function<FieldValue(const TrainConfig&)> get;
  // Throws invalid_input with the reason (no location: the caller adds it).
  std::function<void(const FieldValue&)> check;
  // Sets a checked value; empty for keys derived from others (graph_digest, model_options).
  std::function<void(TrainConfig&, const FieldValue&)> set;
  // The id: lines in ascending id_rank; Presence::when lines only where `id_present` holds.
  Presence in_id = Presence::always;
  int id_rank = 0;
  std::string id_name;  // the line's key when it is not `key` ("eval_samples_requested")
  std::function<bool(const TrainConfig&)> id_present;
  // The group's attribute: its name (empty: `key`) and when it is written (Presence::when:
  // exactly when the id line is).
  Presence in_file = Presence::always;
  std::string attribute;

  const std::string& id_key() const { return id_name.empty() ? key : id_name; }
  const std::string& train_flag() const { return flag.empty() ? hand_flag : flag; }
  const std::string& attribute_name() const { return attribute.empty() ? key : attribute; }
  FieldValue default_value() const;  // get(TrainConfig{})
};

// Every row, in the spec's expansion order (first = outermost; no other meaning).
const std::vector<ConfigField>& config_fields();
// The rows a spec and `train` can set (those with `set`), in the same order.
const std::vector<ConfigField>& settable_fields();
// The position in settable_fields() of `key` (its key or plural); -1 if none.
int settable_index(const std::string& key);

// Each integer and number key's check on `config`'s value: a configuration built in code
// is refused as the same spec value or flag would be ("steps must be >= 1, got 0").
void check_scalar_fields(const TrainConfig& config);

// `text` read as the row's kind ("12", "0.5", any string), then checked; throws
// invalid_input naming the key ("steps takes integers, got 'x'").
FieldValue parse_field_text(const ConfigField& field, const std::string& text);
// The id line's value: strings verbatim, integers in decimal, numbers as %.17g.
std::string id_text(const ConfigField& field, const FieldValue& value);

// Shortest text that reads back to the same double.
std::string number_text(double value);

// The identity of a configuration (config_id.cpp): one `key=value` line per row of the id
// in rank order, where present, then `repeat`; the id is its FNV-1a 64.
std::string canonical_parameters(const TrainConfig& config, int repeat);
uint64_t fnv1a64(std::string_view text);
std::string config_id(const TrainConfig& config, int repeat);  // 16 lowercase hex digits

// The schema as one JSON object (`interplace schema`, the root attribute `schema` of result
// files; docs/cli.md "interplace schema"): "fields", one object per row (key, plural, kind,
// values, default, spec_key, flag, hand_flag, switch, spec_only, help, in_id, id_rank,
// id_name, attribute, in_file), and "pipelines", one per row of the pipeline registry
// (name, title, takes_virtual_stages, other_strategies, stage_map, network_loss_only,
// micro_batches_in_groups_of_devices), and "no_pipeline": "e2e".
std::string schema_json();

// The model options a spec's [model_options] sets: the zoo's table (placement/zoo.hpp).
using placement::kModelOptionFields;
using placement::ModelOptionField;

// One non-default model option: its key, its text in model_options_string and its value
// (integer options have `integer` set and the value in `int_value`, the multipliers in
// `real_value`). Result files store each as an attribute model_option_<key>.
struct ModelOptionValue {
  std::string key;
  std::string text;
  bool integer = true;
  int64_t int_value = 0;
  double real_value = 0.0;
};
// The non-default ModelOptions in field order (empty for the defaults).
std::vector<ModelOptionValue> model_option_values(const placement::ModelOptions& options);
// The same as "key=value,..." ("" for the defaults): part of the configuration id, so its
// text never changes.
std::string model_options_string(const placement::ModelOptions& options);
// "cpu-core", or "profile:<path>" when a measured profile replaces the preset.
std::string cost_device_string(const TrainConfig& config);

}  // namespace interplace::runs
