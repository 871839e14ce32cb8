// The schema as JSON (config_fields.hpp, schema_json): what `interplace schema` prints and
// result files carry as their root attribute `schema`, for readers that must not keep
// copies of the keys or the pipelines (the analysis).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/json_text.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/runs/config_choices.hpp"
#include "interplace/runs/config_fields.hpp"

namespace interplace::runs {
namespace {

std::string json_text(std::string_view text) {
  return placement::detail::json_quote(text);
}

const char* boolean(bool value) {
  return value ? "true" : "false";
}

const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::integer:
      return "integer";
    case ValueKind::number:
      return "number";
    case ValueKind::string:
      break;
  }
  return "string";
}

const char* presence_name(Presence presence) {
  switch (presence) {
    case Presence::when:
      return "when";
    case Presence::never:
      return "never";
    case Presence::always:
      break;
  }
  return "always";
}

const char* other_strategies_name(placement::OtherStrategies other) {
  switch (other) {
    case placement::OtherStrategies::run_1f1b_instead:
      return "run_1f1b_instead";
    case placement::OtherStrategies::refused:
      return "refused";
    case placement::OtherStrategies::run:
      break;
  }
  return "run";
}

// One object per line, keys in a fixed order.
class Object {
 public:
  Object& raw(std::string_view key, const std::string& json) {
    text_ += (text_.size() > 1 ? ", " : "") + json_text(key) + ": " + json;
    return *this;
  }
  Object& text(std::string_view key, std::string_view value) { return raw(key, json_text(value)); }
  Object& flag(std::string_view key, bool value) { return raw(key, boolean(value)); }
  std::string str() const { return text_ + "}"; }

 private:
  std::string text_ = "{";
};

std::string field_json(const ConfigField& f) {
  std::string values = "null";
  if (f.values) {
    values = "[";
    for (const std::string& name : f.values())
      values += (values.size() > 1 ? ", " : "") + json_text(name);
    values += "]";
  }
  const FieldValue fallback = f.default_value();
  Object o;
  o.text("key", f.key)
      .text("plural", f.plural)
      .text("kind", kind_name(f.kind))
      .raw("values", values)
      .raw("default", f.kind == ValueKind::string ? json_text(fallback.text) : id_text(f, fallback))
      .flag("spec_key", static_cast<bool>(f.set))
      .text("flag", f.train_flag())
      .flag("hand_flag", f.flag.empty() && !f.hand_flag.empty())
      .flag("switch", f.switch_flag)
      .text("spec_only", f.spec_only)
      .text("help", f.help)
      .text("in_id", presence_name(f.in_id))
      .raw("id_rank", f.in_id == Presence::never ? "null" : std::to_string(f.id_rank))
      .text("id_name", f.id_key())
      .text("attribute", f.attribute_name())
      .text("in_file", presence_name(f.in_file));
  return o.str();
}

std::string pipeline_json(const placement::PipelineInfo& p) {
  return Object()
      .text("name", p.name)
      .text("title", p.title)
      .flag("takes_virtual_stages", p.takes_virtual_stages)
      .text("other_strategies", other_strategies_name(p.other_strategies))
      .text("stage_map", p.stage_map == placement::StageMap::v ? "v" : "loop")
      .flag("network_loss_only", p.network_loss_only)
      .flag("micro_batches_in_groups_of_devices", p.micro_batches_in_groups_of_devices)
      .str();
}

}  // namespace

std::string schema_json() {
  std::string fields;
  for (const ConfigField& f : config_fields()) {
    fields += (fields.empty() ? "\n    " : ",\n    ") + field_json(f);
  }
  std::string pipelines;
  for (const placement::PipelineInfo& p : placement::pipeline_registry()) {
    pipelines += (pipelines.empty() ? "\n    " : ",\n    ") + pipeline_json(p);
  }
  return "{\n  \"schema_version\": 1,\n  \"fields\": [" + fields + "\n  ],\n  \"pipelines\": [" +
         pipelines + "\n  ],\n  \"no_pipeline\": " + json_text(kEndToEndName) + "\n}\n";
}

}  // namespace interplace::runs
