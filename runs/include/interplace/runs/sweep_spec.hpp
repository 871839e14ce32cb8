// Sweep specifications (TOML, docs/cli.md "Sweep specifications"): lists of values per
// dimension, expanded into a cross product of training configurations, minus exclusions.
// Everything is validated while parsing, so that a bad spec fails before anything runs,
// with "file:line: reason".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interplace/runs/config_fields.hpp"
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

}  // namespace interplace::runs
