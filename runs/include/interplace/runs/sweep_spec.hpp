// Sweep specifications (TOML, docs/cli.md "Sweep specifications"): lists of values per
// dimension, expanded into a cross product of training configurations, minus exclusions.
// Everything is validated while parsing, so that a bad spec fails before anything runs,
// with "file:line: reason".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/runs/training.hpp"

namespace interplace::runs {

struct SweepConfig {
  int64_t index = 0;  // position in the expansion (0-based)
  int repeat = 0;     // 0 .. repeats-1; enters the id, so repeats are distinct configurations
  TrainConfig train;
  std::string id;  // 16 hex digits: FNV-1a 64 of canonical_parameters(train, repeat)
  // Position of the parameter setting in the expansion: the repeats of one setting share it,
  // so --shard keeps them together (one machine measures every run of a setting).
  int64_t setting = 0;
};

struct SweepSpec {
  std::string path;
  std::string text;                    // the file as read, stored in result files
  std::vector<std::string> overrides;  // the command line's key=value, in order
  std::vector<SweepConfig> configs;
};

// Throws invalid_input "path:line: reason" for syntax errors, unknown keys, wrong types,
// empty lists and bad values; "path: ..." when the file cannot be read.
//
// `overrides` are "key=value" texts applied to the parsed file before anything is checked,
// exactly as if the file said `key = value` instead: key is a top-level key (a dimension,
// singular or plural, which replaces both spellings; repeats; description) or
// model_options.OPTION or model_options.MODEL.OPTION. value is a TOML value (3, 1e-3,
// "text", [2, 4]) or bare text, with commas separating list items (models=resnet20,gpt-mini;
// devices=2,4). models=... also drops the model_options tables of models no longer swept.
// Errors name the override: "override 'steps=0': steps must be >= 1, got 0".
SweepSpec load_sweep_spec(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from text already read; `path` names it in messages and in the result.
SweepSpec parse_sweep_spec(const std::string& text, const std::string& path,
                           const std::vector<std::string>& overrides = {});

// `key=value` lines in the order of docs/results-format.md's attribute table (plus
// data_dir and repeat): the identity of a configuration.
std::string canonical_parameters(const TrainConfig& config, int repeat);
uint64_t fnv1a64(std::string_view text);
std::string config_id(const TrainConfig& config, int repeat);  // 16 lowercase hex digits

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
