#include "interplace/placement/report_json.hpp"

#include "json_text.hpp"

namespace interplace::placement {
namespace {

using detail::json_number;

std::string field(const char* key, const std::string& value) {
  std::string out = "\"";
  out += key;
  out += "\": ";
  return out + value;
}

template <typename T, typename Format>
std::string array(const std::vector<T>& values, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += format(values[i]);
  }
  return out + "]";
}

}  // namespace

std::string to_json(const GraphStats& stats) {
  std::string out = "{";
  out += field("node_count", std::to_string(stats.node_count)) + ", ";
  out += field("edge_count", std::to_string(stats.edge_count)) + ", ";
  out += field("depth", std::to_string(stats.depth)) + ", ";
  out += field("max_width", std::to_string(stats.max_width)) + ", ";
  out += field("mean_branching_factor", json_number(stats.mean_branching_factor)) + ", ";
  out += field("critical_path_cost_share", json_number(stats.critical_path_cost_share));
  return out + "}";
}

std::string to_json(const Placement& placement) {
  std::string out = "{";
  out += field("device_count", std::to_string(placement.device_count)) + ", ";
  out += field("device_of_node",
               array(placement.device_of_node, [](int d) { return std::to_string(d); }));
  return out + "}";
}

std::string to_json(const SimulationResult& result) {
  std::string out = "{";
  out += field("makespan_s", json_number(result.makespan_s)) + ", ";
  out += field("step_time_s", json_number(result.step_time_s)) + ", ";
  out += field("idle_fraction", json_number(result.idle_fraction)) + ", \"stages\": [";
  for (size_t j = 0; j < result.stages.size(); ++j) {
    const StageTimeline& s = result.stages[j];
    out += j > 0 ? ", {" : "{";
    out += field("busy_s", json_number(s.busy_s)) + ", ";
    out += field("idle_s", json_number(s.idle_s)) + ", ";
    out += field("first_start_s", json_number(s.first_start_s)) + ", ";
    out += field("last_end_s", json_number(s.last_end_s)) + ", ";
    out += field("internal_idle_s", json_number(s.internal_idle_s)) + ", ";
    out += field("peak_memory_bytes", std::to_string(s.peak_memory_bytes)) + ", ";
    out += field("step_end_s", array(s.step_end_s, [](double t) { return json_number(t); }));
    out += "}";
  }
  return out + "]}";
}

}  // namespace interplace::placement
