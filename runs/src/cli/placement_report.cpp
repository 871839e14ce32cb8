#include "placement_report.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "interplace/placement/report_json.hpp"
#include "interplace/placement/stage_chain.hpp"
#include "interplace/placement/step_estimate.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

// Everything derived from the placement, computed once for either format.
struct PlacementFacts {
  std::vector<int> node_counts;
  std::vector<double> compute_s;  // forward+backward of one micro-batch
  std::vector<int64_t> memory_bytes;
  std::vector<double> load_s;
  std::optional<std::string> chain_violation;
  std::optional<std::string> local_ineligibility;
  double estimated_step_s = 0.0;
};

PlacementFacts facts_of(const PlacementContext& c) {
  const placement::Placement& p = c.run.placement;
  PlacementFacts f;
  f.node_counts = placement::device_node_counts(p);
  f.compute_s.assign(p.device_count, 0.0);
  for (const placement::Node& node : c.graph.nodes()) {
    f.compute_s[p.device_of_node[node.id]] += c.run.costs.compute_s(node.id);
  }
  f.memory_bytes = placement::device_memory_bytes(p, c.run.costs, c.model.micro_batches);
  f.load_s = placement::device_loads_s(c.graph, p, c.run.costs, c.cost_model);
  f.chain_violation = placement::stage_chain_violation(c.graph, p);
  f.local_ineligibility = placement::local_strategy_ineligibility(c.graph, p);
  f.estimated_step_s = placement::estimate_step_time_s(c.graph, c.run.costs, c.cost_model.link(), p,
                                                       c.model.micro_batches);
  return f;
}

}  // namespace

std::string placement_text(const PlacementContext& c, bool device_table) {
  const PlacementFacts f = facts_of(c);
  std::string out = c.graph.name() + ": " + plural(c.graph.node_count(), "node", "nodes") +
                    ", batch size " + std::to_string(c.model.options.batch_size) + " in " +
                    plural(c.model.micro_batches, "micro-batch", "micro-batches") + " of " +
                    std::to_string(c.graph.batch_size()) + "; order " + c.selection.order +
                    ", placer " + c.selection.placer + ", " +
                    plural(c.selection.devices, "device", "devices") + "\n";
  out += device_text(c.device, c.cost_model) + "\n";
  if (device_table) {
    TextTable table({"device", "nodes", "compute", "memory", "load"});
    for (int d = 0; d < c.run.placement.device_count; ++d) {
      table.add_row(
          {std::to_string(d), std::to_string(f.node_counts[d]), format_seconds(f.compute_s[d]),
           format_bytes(static_cast<double>(f.memory_bytes[d])), format_seconds(f.load_s[d])});
    }
    out += "\n" + table.str() +
           "(compute: forward+backward of one micro-batch; memory: parameter state and the "
           "activations of every micro-batch; load: compute plus boundary transfers)\n\n";
  }
  // The library's reason starts with "not a stage chain: ", which the line already says.
  std::string why = f.chain_violation.value_or("");
  if (why.starts_with("not a stage chain: "))
    why.erase(0, std::string("not a stage chain: ").size());
  out += "stage chain: " + (f.chain_violation ? "no, " + why : "yes") + "\n";
  out += "local/interlocking strategies: " +
         (f.local_ineligibility ? "not eligible, " + *f.local_ineligibility : "eligible") + "\n";
  out += "list-schedule step estimate: " + format_seconds(f.estimated_step_s) +
         " (what refine minimises; `simulate` runs the pipeline schedule)\n";
  out += "placer wall time: " + format_seconds(c.run.placer_wall_s) + "\n";
  if (const auto& log = c.run.rl_log) {
    // With groups the curve is the group graph's estimate; start, greedy and best are the
    // full graph's (docs/placers.md#grouping).
    // "on 448 groups", or per level "(45 on 448 groups, then 5 on 1344 groups; ...)"
    auto placed = [](int count) {
      return count > 0 ? std::to_string(count) + " groups" : std::string("the nodes");
    };
    const std::vector<int>& levels = log->level_groups;
    std::string groups;
    if (levels.size() == 1) {
      groups = " on " + placed(levels[0]) + " (learning curve: group-graph estimates)";
    } else if (levels.size() > 1) {
      for (size_t level = 0; level < levels.size(); ++level) {
        groups += (level == 0 ? " (" : ", then ") + std::to_string(log->level_episodes[level]) +
                  " on " + placed(levels[level]);
      }
      groups += "; learning curve: group-graph estimates)";
    }
    out += "rl: " + std::to_string(log->episodes_run) + " episodes" + groups +
           "; simulated step time of the " + "start " + format_seconds(log->start_step_time_s) +
           ", greedy policy " + format_seconds(log->greedy_step_time_s) + ", best found " +
           format_seconds(log->best_final_s) + "\n";
    out += "rl learning curve (episode: step time, best so far):";
    const size_t count = log->episode_step_time_s.size();
    const size_t stride = std::max<size_t>(1, count / 10);
    for (size_t e = 0; e < count; e += stride) {
      if (e + stride >= count) e = count - 1;  // always end on the last episode
      out += " " + std::to_string(e + 1) + ": " + format_seconds(log->episode_step_time_s[e]) +
             ", " + format_seconds(log->best_step_time_s[e]) + ";";
    }
    out += "\n";
  }
  return out;
}

JsonObject placement_json(const PlacementContext& c) {
  const PlacementFacts f = facts_of(c);
  std::vector<std::string> devices;
  for (int d = 0; d < c.run.placement.device_count; ++d) {
    devices.push_back(JsonObject()
                          .integer("device", d)
                          .integer("node_count", f.node_counts[d])
                          .number("compute_s", f.compute_s[d])
                          .integer("memory_bytes", f.memory_bytes[d])
                          .number("load_s", f.load_s[d])
                          .str());
  }
  auto optional_string = [](JsonObject& out, const char* key,
                            const std::optional<std::string>& value) {
    if (value) {
      out.string(key, *value);
    } else {
      out.null(key);
    }
  };
  JsonObject out;
  out.string("model", c.model.label())
      .raw("model_options", model_options_json(c.model))
      .integer("node_count", c.graph.node_count())
      .string("order", c.selection.order)
      .string("placer", c.selection.placer)
      .integer("device_count", c.run.placement.device_count)
      .integer("batch_size", c.model.options.batch_size)
      .integer("micro_batches", c.model.micro_batches)
      .integer("micro_batch_size", c.graph.batch_size())
      .unsigned_integer("seed", c.selection.seed)
      .raw("device", device_json(c.device, c.cost_model))
      .raw("link", link_json(c.cost_model.link()))
      .string("optimizer", placement::to_string(c.cost_model.optimizer()))
      .raw("devices", json_array(devices, [](const std::string& s) { return s; }))
      .raw("placement", placement::to_json(c.run.placement))
      .boolean("stage_chain", !f.chain_violation);
  optional_string(out, "stage_chain_violation", f.chain_violation);
  out.boolean("local_eligible", !f.local_ineligibility);
  optional_string(out, "local_ineligibility", f.local_ineligibility);
  out.number("estimated_step_time_s", f.estimated_step_s)
      .number("placer_wall_s", c.run.placer_wall_s);
  if (const auto& log = c.run.rl_log) {
    auto numbers = [](const std::vector<double>& values) {
      return json_array(values, [](double v) { return json_number(v); });
    };
    out.raw("rl", JsonObject()
                      .integer("episodes_run", log->episodes_run)
                      .integer("groups", log->groups)
                      .raw("level_groups",
                           json_array(log->level_groups, [](int v) { return std::to_string(v); }))
                      .raw("level_episodes",
                           json_array(log->level_episodes, [](int v) { return std::to_string(v); }))
                      .number("start_step_time_s", log->start_step_time_s)
                      .number("greedy_step_time_s", log->greedy_step_time_s)
                      .number("best_step_time_s", log->best_final_s)
                      .raw("episode_step_time_s", numbers(log->episode_step_time_s))
                      .raw("best_so_far_step_time_s", numbers(log->best_step_time_s))
                      .str());
  }
  return out;
}

}  // namespace interplace::runs::cli
