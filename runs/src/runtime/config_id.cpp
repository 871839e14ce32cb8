// The identity of a configuration: the same parameters give the same id in every file, so
// shards merge and --resume recognises finished work (docs/results-format.md).
#include <algorithm>
#include <cstdio>

#include "interplace/runs/config_fields.hpp"

namespace interplace::runs {

std::vector<ModelOptionValue> model_option_values(const placement::ModelOptions& o) {
  std::vector<ModelOptionValue> out;
  for (const ModelOptionField& f : kModelOptionFields) {
    if (f.integer != nullptr && o.*f.integer != 0) {
      out.push_back({f.key, std::to_string(o.*f.integer), true, o.*f.integer, 0.0});
    } else if (f.real != nullptr && o.*f.real != 1.0) {
      out.push_back({f.key, number_text(o.*f.real), false, 0, o.*f.real});
    }
  }
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
  // The id's rows in their rank order (config_fields.cpp), each where it is present.
  static const std::vector<const ConfigField*> in_id_order = [] {
    std::vector<const ConfigField*> out;
    for (const ConfigField& f : config_fields()) {
      if (f.in_id != Presence::never) out.push_back(&f);
    }
    std::sort(out.begin(), out.end(),
              [](const ConfigField* a, const ConfigField* b) { return a->id_rank < b->id_rank; });
    return out;
  }();
  std::string out;
  for (const ConfigField* f : in_id_order) {
    if (f->in_id == Presence::when && !f->id_present(c)) continue;
    out += f->id_key() + "=" + id_text(*f, f->get(c)) + "\n";
  }
  return out + "repeat=" + std::to_string(repeat) + "\n";
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
