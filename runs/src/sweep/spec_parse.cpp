// Reading a sweep spec: TOML through toml11 (which keeps every value's source line, so
// each error can say where), every value checked, then the deterministic expansion.
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <toml.hpp>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/sweep_spec.hpp"
#include "toml_nesting.hpp"

namespace interplace::runs {
namespace {

using Value = toml::basic_value<toml::discard_comments, std::map, std::vector>;

constexpr int64_t kMaxConfigurations = 1'000'000;
constexpr std::string_view kOverridePrefix = "override '";

std::string type_name(const Value& v) {
  std::ostringstream out;
  out << v.type();
  return out.str();
}

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const Value& at, const std::string& reason) const {
    // A value from the command line (apply_overrides) is named by its override.
    const std::string from = at.location().file_name();
    if (from.starts_with(kOverridePrefix)) throw_invalid(from + ": " + reason);
    throw_invalid(path_ + ":" + std::to_string(at.location().line()) + ": " + reason);
  }

  FieldValue convert(const ConfigField& dim, const Value& v) const {
    FieldValue out;
    if (dim.kind == ValueKind::string) {
      if (!v.is_string()) {
        // Lists kept in one string (eval_epochs, lr_milestones) are where a number turns up.
        const std::string hint =
            v.is_integer() || v.is_floating()
                ? ". HINT: quote it; a list kept in one string is one quoted value: " + dim.key +
                      " = \"1,5,10\" in a spec, " + dim.key + "='\"1,5,10\"' on the command line"
                : "";
        fail(v, dim.key + " takes strings, got " + type_name(v) + hint);
      }
      out.text = v.as_string().str;
    } else if (dim.kind == ValueKind::integer) {
      if (!v.is_integer()) fail(v, dim.key + " takes integers, got " + type_name(v));
      out.integer = v.as_integer();
      out.text = std::to_string(out.integer);
    } else {
      if (v.is_integer()) {
        out.number = static_cast<double>(v.as_integer());
      } else if (v.is_floating()) {
        out.number = v.as_floating();
      } else {
        fail(v, dim.key + " takes numbers, got " + type_name(v));
      }
      out.text = number_text(out.number);
    }
    try {
      dim.check(out);
    } catch (const Error& e) {
      fail(v, e.what());
    }
    return out;
  }

  // A value or a non-empty list of values.
  std::vector<FieldValue> values(const ConfigField& dim, const std::string& key,
                                 const Value& v) const {
    std::vector<FieldValue> out;
    if (!v.is_array()) return {convert(dim, v)};
    if (v.as_array().empty()) fail(v, "'" + key + "' is an empty list");
    for (const Value& item : v.as_array()) out.push_back(convert(dim, item));
    return out;
  }

  int64_t integer(const Value& v, const std::string& key, int64_t minimum) const {
    if (!v.is_integer()) fail(v, key + " takes an integer, got " + type_name(v));
    if (v.as_integer() < minimum) {
      fail(v, key + " must be >= " + std::to_string(minimum) + ", got " +
                  std::to_string(v.as_integer()));
    }
    return v.as_integer();
  }

  void model_option(placement::ModelOptions& o, const std::string& key, const Value& v) const {
    const ModelOptionField* field = nullptr;
    std::string valid;
    for (const ModelOptionField& f : kModelOptionFields) {
      if (f.key == key) field = &f;
      valid += (valid.empty() ? "" : ", ") + std::string(f.key);
    }
    if (field == nullptr) {
      const std::string hint =
          key == "batch_size" ? " (batch_size is a top-level key of the spec)" : "";
      fail(v, "unknown model option '" + key + "'" + hint + " (valid: " + valid +
                  ", or a table per model)");
    }
    if (field->integer != nullptr) {
      o.*field->integer = integer(v, "model option " + key, 1);
      return;
    }
    ConfigField number;
    number.key = key;
    number.kind = ValueKind::number;
    number.check = [&key](const FieldValue& d) { placement::check_multiplier(key, d.number); };
    o.*field->real = convert(number, v).number;
  }

 private:
  std::string path_;
};

// Where each top-level key of the spec is, once checked.
struct Sections {
  std::vector<std::vector<FieldValue>> lists;  // per dimension, in expansion order
  int64_t repeats = 1;
  placement::ModelOptions common_options;
  std::map<std::string, placement::ModelOptions> per_model;  // already includes the common ones
  // Per exclusion: dimension index (or -1 for repeat) -> canonical texts that match.
  std::vector<std::map<int, std::set<std::string>>> exclusions;
};

// "model/models, graph_file/graph_files, ..., " then `others`: for messages.
std::string valid_keys(const std::string& others) {
  std::string valid;
  for (const ConfigField& dim : settable_fields()) {
    valid += dim.key + (dim.plural.empty() ? "" : "/" + dim.plural) + ", ";
  }
  return valid + others;
}

std::string valid_top_level_keys() {
  return valid_keys("repeats, description, [model_options], [[exclude]]");
}

// The family of a seeded model name ("enas-cnn" of "enas-cnn:7"); other names as they are.
std::string family_base(const std::string& model) {
  return model.substr(0, model.find(':'));
}

void read_model_options(const Parser& p, const Value& table, Sections& s,
                        const std::set<std::string>& models) {
  if (!table.is_table()) p.fail(table, "model_options must be a table, got " + type_name(table));
  for (const auto& [key, v] : table.as_table()) {
    if (!v.is_table()) p.model_option(s.common_options, key, v);
  }
  for (const auto& [key, v] : table.as_table()) {
    if (!v.is_table()) continue;
    // A seeded family's name applies to every member swept ([model_options.enas-rnn]
    // for "enas-rnn:0..31"); a member's own table wins.
    const bool family = std::any_of(models.begin(), models.end(), [&](const std::string& m) {
      return m != key && family_base(m) == key;
    });
    if (models.count(key) == 0 && !family) {
      p.fail(v, "model_options." + key + " is for a model the spec does not sweep");
    }
    placement::ModelOptions options = s.common_options;
    for (const auto& [option, value] : v.as_table()) p.model_option(options, option, value);
    s.per_model[key] = options;
  }
}

void read_exclusions(const Parser& p, const Value& list, Sections& s) {
  if (!list.is_array()) p.fail(list, "exclude must be an array of tables ([[exclude]])");
  for (const Value& table : list.as_array()) {
    if (!table.is_table()) p.fail(table, "exclude entries must be tables, got " + type_name(table));
    if (table.as_table().empty()) p.fail(table, "an empty [[exclude]] would drop everything");
    std::map<int, std::set<std::string>> match;
    for (const auto& [key, v] : table.as_table()) {
      if (key == "repeat") {
        const std::vector<Value> items = v.is_array() ? v.as_array() : std::vector<Value>{v};
        for (const Value& item : items) {
          match[-1].insert(std::to_string(p.integer(item, "exclude.repeat", 0)));
        }
        continue;
      }
      const int index = settable_index(key);
      if (index < 0) {
        p.fail(v,
               "unknown key '" + key + "' in [[exclude]] (valid: the dimension keys and repeat)");
      }
      for (const FieldValue& d : p.values(settable_fields()[index], key, v)) {
        match[index].insert(d.text);
      }
    }
    s.exclusions.push_back(std::move(match));
  }
}

// "enas-cnn:0..31" as its 32 members, in seed order (other names as they are).
std::vector<FieldValue> expand_model_sets(const std::vector<FieldValue>& models) {
  std::vector<FieldValue> expanded;
  for (const FieldValue& d : models) {
    for (const std::string& name : placement::expand_model_names(d.text)) {
      FieldValue member = d;
      member.text = name;
      expanded.push_back(member);
    }
  }
  return expanded;
}

Sections read_sections(const Parser& p, const Value& root) {
  const std::vector<ConfigField>& dims = settable_fields();
  Sections s;
  s.lists.resize(dims.size());
  std::vector<const Value*> given(dims.size(), nullptr);
  for (const auto& [key, v] : root.as_table()) {
    if (key == "model_options" || key == "exclude") continue;
    if (key == "description") {
      if (!v.is_string()) p.fail(v, "description must be a string, got " + type_name(v));
      continue;
    }
    if (key == "repeats") {
      s.repeats = p.integer(v, "repeats", 1);
      continue;
    }
    const int index = settable_index(key);
    if (index < 0) p.fail(v, "unknown key '" + key + "' (valid: " + valid_top_level_keys() + ")");
    if (given[index] != nullptr) {
      p.fail(v, "both '" + dims[index].key + "' and '" + dims[index].plural + "' are given");
    }
    given[index] = &v;
    s.lists[index] = p.values(dims[index], key, v);
    if (dims[index].key == "model") s.lists[index] = expand_model_sets(s.lists[index]);
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (given[i] != nullptr) continue;
    s.lists[i].push_back(dims[i].default_value());
  }
  const auto model = static_cast<size_t>(settable_index("model"));
  const auto graph_file = static_cast<size_t>(settable_index("graph_file"));
  if (given[model] != nullptr && given[graph_file] != nullptr) {
    p.fail(*given[graph_file],
           "a spec sweeps 'model' or 'graph_file', not both (a graph file is the network)");
  }
  std::set<std::string> models;
  for (const FieldValue& d : s.lists[model]) models.insert(d.text);
  if (root.contains("model_options")) read_model_options(p, root.at("model_options"), s, models);
  if (root.contains("exclude")) read_exclusions(p, root.at("exclude"), s);
  return s;
}

bool excluded(const Sections& s, const std::vector<std::string>& texts, int repeat) {
  for (const auto& match : s.exclusions) {
    bool all = true;
    for (const auto& [index, valid] : match) {
      const std::string& text = index < 0 ? std::to_string(repeat) : texts[index];
      if (valid.count(text) == 0) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

// Text of the command line as it appears in messages and in toml11's source names: at most
// 120 characters, so that neither an error line nor the parsing of a long override's items
// (each parse copies its source name) grows with it.
std::string shortened(const std::string& text) {
  return text.size() <= 120 ? text : text.substr(0, 117) + "...";
}

// Checked before toml11 parses: it recurses once per level and overflows the stack.
[[noreturn]] void throw_too_deep(const std::string& where) {
  throw_invalid(where + ": nested more than " + std::to_string(sweep::kMaxTomlNesting) +
                " levels deep (arrays, inline tables or dotted keys), where a sweep spec needs 3. "
                "HINT: list each dimension as one flat array");
}

// One override's value, parsed as TOML named "override 'key=value'" (Parser::fail quotes it).
Value override_value(const std::string& name, const std::string& text) {
  if (sweep::line_nested_too_deep("v = " + text)) throw_too_deep(name);  // a value, as parsed
  auto parse = [&name](const std::string& value) -> std::optional<Value> {
    try {
      std::istringstream stream("v = " + value + "\n");
      Value doc = toml::parse<toml::discard_comments, std::map, std::vector>(stream, name);
      return doc.as_table().at("v");
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  auto quoted = [](const std::string& value) {
    std::string out = "\"";
    for (const char c : value) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  // A TOML value as written in a file: 3, 1e-3, "text", [2, 4].
  if (auto value = parse(text)) return *value;
  if (text.starts_with("[") || text.starts_with("\"")) {
    throw_invalid(name + ": not a TOML value: " + shortened(text));
  }
  // Bare text: items separated by commas, each a TOML scalar (2, 0.5) or else a string.
  std::vector<std::string> items;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string list;
  for (const std::string& item : items) {
    if (item.empty()) throw_invalid(name + ": an empty list item");
    const std::optional<Value> scalar = parse(item);
    // One item per line: toml11 scans a value's whole line for its comments, which made a
    // long one-line list quadratic (40,000 items: 8 s).
    list += (list.empty() ? "" : ",\n") +
            (scalar && !scalar->is_array() && !scalar->is_table() ? item : quoted(item));
  }
  std::optional<Value> value = parse(items.size() == 1 ? list : "[" + list + "]");
  if (!value) throw_invalid(name + ": not a TOML value: " + shortened(text));
  return *value;
}

// After models=...: the spec's model_options tables for models no longer swept go too
// (models=resnet20 on a spec with [model_options.gpt-mini] would fail otherwise).
void drop_unswept_model_options(Value& root, const Value& models) {
  auto& table = root.as_table();
  const auto options = table.find("model_options");
  if (options == table.end() || !options->second.is_table()) return;
  std::set<std::string> swept;
  for (const Value& m : models.is_array() ? models.as_array() : std::vector<Value>{models}) {
    if (!m.is_string()) continue;
    swept.insert(m.as_string().str);
    swept.insert(family_base(m.as_string().str));  // a set keeps its family's table
  }
  auto& per_model = options->second.as_table();
  for (auto at = per_model.begin(); at != per_model.end();) {
    at = at->second.is_table() && swept.count(at->first) == 0 ? per_model.erase(at) : std::next(at);
  }
}

std::string valid_override_keys() {
  return valid_keys("repeats, description, model_options.OPTION, model_options.MODEL.OPTION");
}

// Sets each override in the parsed document, as if the file said `key = value`.
void apply_overrides(Value& root, const std::vector<std::string>& overrides) {
  for (const std::string& text : overrides) {
    const std::string name = std::string(kOverridePrefix) + shortened(text) + "'";
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw_invalid(name + ": overrides are key=value (valid keys: " + valid_override_keys() + ")");
    }
    const std::string key = text.substr(0, eq);
    Value value = override_value(name, text.substr(eq + 1));
    auto& table = root.as_table();
    if (key.starts_with("model_options.")) {
      const std::string rest = key.substr(14);
      const size_t dot = rest.find('.');
      if (rest.empty() || dot == 0 || dot + 1 == rest.size() ||
          (dot != std::string::npos && rest.find('.', dot + 1) != std::string::npos)) {
        throw_invalid(name + ": use model_options.OPTION or model_options.MODEL.OPTION");
      }
      Value& options = table["model_options"];
      if (!options.is_table()) options = Value(Value::table_type{});
      if (dot == std::string::npos) {
        options.as_table()[rest] = value;
      } else {
        Value& model = options.as_table()[rest.substr(0, dot)];
        if (!model.is_table()) model = Value(Value::table_type{});
        model.as_table()[rest.substr(dot + 1)] = value;
      }
      continue;
    }
    if (key == "repeats" || key == "description") {
      table[key] = value;
      continue;
    }
    const int index = settable_index(key);
    if (index < 0) {
      throw_invalid(name + ": unknown key '" + key + "' (valid: " + valid_override_keys() + ")");
    }
    const ConfigField& dim = settable_fields()[static_cast<size_t>(index)];
    table.erase(dim.key);
    if (!dim.plural.empty()) table.erase(dim.plural);
    table[key] = value;
    if (dim.key == "model") drop_unswept_model_options(root, value);
  }
}

// The pipeline a non-global strategy's configurations record: the first listed that such a
// strategy accepts (e2e, and every pipeline the registry does not refuse for it:
// placement::OtherStrategies), else 1f1b.
FieldValue non_global_pipeline(const std::vector<FieldValue>& listed) {
  for (const FieldValue& value : listed) {
    const TrainPipeline pipeline(value.text);
    if (pipeline.end_to_end() || placement::pipeline_info(*pipeline.pipeline()).other_strategies !=
                                     placement::OtherStrategies::refused) {
      return value;
    }
  }
  FieldValue fallback = listed.front();
  fallback.text = to_string(TrainPipeline(placement::PipelineKind::one_f_one_b));
  return fallback;
}

// Whether the pipeline takes virtual stages (the registry's takes_virtual_stages).
bool takes_virtual_stages(const TrainPipeline& pipeline) {
  return !pipeline.end_to_end() &&
         placement::pipeline_info(*pipeline.pipeline()).takes_virtual_stages;
}

// Cross product, first dimension outermost, repeat innermost.
std::vector<SweepConfig> expand(const Sections& s) {
  const std::vector<ConfigField>& dims = settable_fields();
  int64_t total = s.repeats;
  for (const auto& list : s.lists) {
    total *= static_cast<int64_t>(list.size());
    if (total > kMaxConfigurations) {
      throw_invalid("the spec expands to more than " + std::to_string(kMaxConfigurations) +
                    " configurations");
    }
  }
  const auto pipeline = static_cast<size_t>(settable_index("pipeline"));
  const auto micro_batches = static_cast<size_t>(settable_index("micro_batches"));
  const auto virtual_stages = static_cast<size_t>(settable_index("virtual_stages"));
  std::vector<SweepConfig> configs;
  std::set<std::string> seen;
  std::map<std::string, TrainConfig> graph_files;  // path -> its resolved fields
  std::vector<size_t> at(dims.size(), 0);
  int64_t setting = 0;
  for (int64_t n = 0; n < total / s.repeats; ++n) {
    TrainConfig config;
    std::vector<std::string> texts(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      dims[i].set(config, s.lists[i][at[i]]);
      texts[i] = s.lists[i][at[i]].text;
    }
    const bool global = config.strategy.kind == placement::StrategyKind::global;
    // The pipeline schedules only the global strategy: the others keep the first listed
    // that they accept (1f1b when none is).
    if (!global) {
      const FieldValue value = non_global_pipeline(s.lists[pipeline]);
      dims[pipeline].set(config, value);
      texts[pipeline] = value.text;
    }
    // One unpipelined pass has one micro-batch, whatever micro_batches lists; the
    // duplicates this makes are dropped by their id below.
    if (global && config.pipeline.end_to_end()) {
      config.micro_batches = 1;
      texts[micro_batches] = "1";
    }
    // Virtual stages are for the pipelines that take them: the others run V = 1 whatever
    // virtual_stages lists (the duplicates go as e2e's do).
    if (!takes_virtual_stages(config.pipeline)) {
      config.virtual_stages = 1;
      texts[virtual_stages] = "1";
    }
    resolve_epochs(config);            // steps from epochs, so that the id and the file say them
    if (!config.graph_file.empty()) {  // model, digest and family from the file, read once
      auto known = graph_files.find(config.graph_file);
      if (known == graph_files.end()) {
        TrainConfig resolved = config;
        resolve_graph_file(resolved);
        known = graph_files.emplace(config.graph_file, resolved).first;
      }
      config.model = known->second.model;
      config.graph_digest = known->second.graph_digest;
      config.graph_family = known->second.graph_family;
    }
    auto options = s.per_model.find(config.model);
    if (options == s.per_model.end()) options = s.per_model.find(family_base(config.model));
    config.model_options = options != s.per_model.end() ? options->second : s.common_options;
    bool kept = false;
    for (int repeat = 0; repeat < s.repeats; ++repeat) {
      if (excluded(s, texts, repeat)) continue;
      SweepConfig c{static_cast<int64_t>(configs.size()), repeat, config, config_id(config, repeat),
                    setting};
      if (seen.insert(c.id).second) {
        configs.push_back(std::move(c));
        kept = true;
      }
    }
    if (kept) ++setting;
    for (size_t i = dims.size(); i-- > 0;) {  // odometer: the last dimension turns fastest
      if (++at[i] < s.lists[i].size()) break;
      at[i] = 0;
    }
  }
  return configs;
}

// toml11's messages span several lines ("[error] ...", "--> file", the source line);
// the first says what is wrong.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.starts_with("[error] ")) line = line.substr(8);
  const size_t colon = line.find(": ");
  if (line.starts_with("toml::") && colon != std::string::npos) line = line.substr(colon + 2);
  return line;
}

}  // namespace

SweepSpec parse_sweep_spec(const std::string& text, const std::string& path,
                           const std::vector<std::string>& overrides) {
  const Parser parser(path);
  Value root;
  if (const auto line = sweep::line_nested_too_deep(text)) {
    throw_too_deep(path + ":" + std::to_string(*line));
  }
  try {
    std::istringstream stream(text);
    root = toml::parse<toml::discard_comments, std::map, std::vector>(stream, path);
  } catch (const toml::exception& e) {
    throw_invalid(path + ":" + std::to_string(e.location().line()) +
                  ": TOML syntax error: " + first_line(e.what()));
  } catch (const std::exception& e) {
    throw_invalid(path + ": not a valid TOML file: " + first_line(e.what()));
  }
  if (!root.is_table()) throw_invalid(path + ": not a TOML table");
  apply_overrides(root, overrides);
  if (root.contains("aux_head") && root.contains("aux_head_capped")) {
    throw_invalid(path +
                  ": aux_head and aux_head_capped are both given; aux_head_capped = 1 is the "
                  "older spelling of aux_head = \"capped\". HINT: keep aux_head");
  }
  SweepSpec spec{path, text, overrides, {}};
  const Sections sections = read_sections(parser, root);
  spec.configs = expand(sections);
  if (spec.configs.empty()) throw_invalid(path + ": the exclusions drop every configuration");
  return spec;
}

SweepSpec load_sweep_spec(const std::string& path, const std::vector<std::string>& overrides) {
  check_input_file(path, "sweep spec", kMaxTextInputBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid(path + ": cannot read the sweep spec (missing or unreadable)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_sweep_spec(text.str(), path, overrides);
}

}  // namespace interplace::runs
