// Placers x traversal orders on K devices: how long each placer takes on each order, and the
// simulated step time (global strategy) of every placement. A plain timed program, not
// Google Benchmark: one measurement per (model, order, placer) is the unit of interest.
//   bench_placers [--models a,b] [--devices 8] [--micro-batches 8] [--pipeline gpipe]
//                 [--batch-size 1] [--device-preset cpu-core] [--repeats 3] [--json FILE]
// Models missing from the catalog are skipped with a message; with no --models it uses
// inception_v3 and gpt2-small where the catalog has them, else the whole catalog.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/step_simulation.hpp"
#include "interplace/placement/zoo.hpp"

namespace {

namespace pl = interplace::placement;

struct Options {
  std::vector<std::string> models;
  int devices = 8;
  int micro_batches = 8;
  std::string pipeline = "gpipe";
  int64_t batch_size = 1;
  std::string preset = "cpu-core";
  int repeats = 3;
  std::string json_path;
};

struct Cell {
  double placer_s = std::numeric_limits<double>::quiet_NaN();
  double step_s = std::numeric_limits<double>::quiet_NaN();
  std::string messages;  // the simulated schedule: "stage" (a chain) or "node"
  std::string error;     // why there is no placement
};

bool in_catalog(const std::string& name) {
  const auto& catalog = pl::model_catalog();
  return std::any_of(catalog.begin(), catalog.end(),
                     [&](const pl::ModelInfo& info) { return info.name == name; });
}

std::vector<std::string> models_to_run(const Options& o) {
  const bool defaults = o.models.empty();
  const std::vector<std::string> wanted =
      defaults ? std::vector<std::string>{"inception_v3", "gpt2-small"} : o.models;
  std::vector<std::string> models;
  for (const std::string& name : wanted) {
    if (in_catalog(name)) {
      models.push_back(name);
    } else {
      std::printf("skipping %s: not in the model catalog\n", name.c_str());
    }
  }
  if (models.empty() && defaults) {
    std::printf("using the whole catalog instead\n");
    for (const pl::ModelInfo& info : pl::model_catalog()) models.push_back(info.name);
  }
  return models;
}

// Minimum over up to `repeats` runs, stopping once a second has been spent.
double time_placer(const pl::Placer& placer, const pl::Graph& graph, const pl::Order& order,
                   const pl::PlacementRequest& request, int repeats, pl::Placement& result) {
  double best = std::numeric_limits<double>::infinity();
  double spent = 0.0;
  for (int r = 0; r < repeats && spent < 1.0; ++r) {
    const auto start = std::chrono::steady_clock::now();
    result = placer(graph, order, request);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    spent += s;
  }
  return best;
}

std::string cell_text(double seconds) {
  if (seconds != seconds) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", seconds * 1e3);
  return buffer;
}

// Step times of node-level schedules (placements that are not stage chains) get a '*'.
void print_table(const char* title, const std::vector<std::string>& orders,
                 const std::vector<std::string>& placers,
                 const std::vector<std::vector<Cell>>& cells, double Cell::*field) {
  std::printf("\n%s\n%-14s", title, "order");
  for (const std::string& p : placers) std::printf(" %12s", p.c_str());
  std::printf("\n");
  for (size_t i = 0; i < orders.size(); ++i) {
    std::printf("%-14s", orders[i].c_str());
    for (size_t j = 0; j < placers.size(); ++j) {
      const Cell& cell = cells[i][j];
      const bool marked = field == &Cell::step_s && cell.messages == "node";
      std::printf(" %12s", (cell_text(cell.*field) + (marked ? "*" : "")).c_str());
    }
    std::printf("\n");
  }
}

std::string json_number(double value) {
  if (value != value || value == std::numeric_limits<double>::infinity()) return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return out;
}

// Runs every order x placer on one model, prints its tables, returns its JSON object.
std::string bench_model(const Options& o, const std::string& model,
                        const pl::DevicePreset& preset) {
  pl::ModelOptions model_options;
  model_options.batch_size = o.batch_size;
  const pl::Graph graph = pl::build_model(model, model_options);
  const pl::CostModel cost_model(preset.device, preset.link);
  const pl::NodeCosts costs = cost_model.node_costs(graph);
  pl::OrderOptions order_options;
  for (pl::NodeId id = 0; id < graph.node_count(); ++id) {
    order_options.node_cost.push_back(costs.compute_s(id));
  }
  pl::PlacementRequest request{.device_count = o.devices, .cost_model = cost_model};
  request.micro_batches = o.micro_batches;
  pl::StepRequest step;
  step.pipeline = pl::pipeline_by_name(o.pipeline);
  step.micro_batches = o.micro_batches;

  std::printf("\n== %s: %d nodes, batch size %lld, %d devices (%s), %d micro-batches, %s\n",
              model.c_str(), graph.node_count(), static_cast<long long>(o.batch_size), o.devices,
              preset.name.c_str(), o.micro_batches, o.pipeline.c_str());
  const std::vector<std::string>& orders = pl::order_names();
  const std::vector<std::string>& placers = pl::placer_names();
  std::vector<std::vector<Cell>> cells(orders.size(), std::vector<Cell>(placers.size()));
  for (size_t i = 0; i < orders.size(); ++i) {
    const pl::Order order = pl::compute_order(graph, pl::order_by_name(orders[i]), order_options);
    for (size_t j = 0; j < placers.size(); ++j) {
      Cell& cell = cells[i][j];
      try {
        pl::Placement placement;
        cell.placer_s = time_placer(pl::placer_by_name(placers[j]), graph, order, request,
                                    o.repeats, placement);
        const pl::StepReport report = pl::simulate_step(graph, placement, costs, cost_model, step);
        cell.step_s = report.step_time_s;
        cell.messages = pl::to_string(report.messages);
      } catch (const interplace::Error& e) {
        cell.error = e.what();
      }
    }
  }
  print_table("placer wall time (ms)", orders, placers, cells, &Cell::placer_s);
  print_table("simulated step time (ms; *: not a stage chain, list-schedule estimate)", orders,
              placers, cells, &Cell::step_s);
  double best = std::numeric_limits<double>::infinity();
  std::string best_name;
  std::string json = "{\"model\": \"" + json_escape(model) +
                     "\", \"node_count\": " + std::to_string(graph.node_count()) +
                     ", \"results\": [";
  for (size_t i = 0; i < orders.size(); ++i) {
    for (size_t j = 0; j < placers.size(); ++j) {
      const Cell& c = cells[i][j];
      if (!c.error.empty())
        std::printf("%s/%s: %s\n", orders[i].c_str(), placers[j].c_str(), c.error.c_str());
      if (c.error.empty() && c.step_s < best) {
        best = c.step_s;
        best_name = orders[i] + " + " + placers[j];
      }
      json += (i + j > 0 ? ", " : "") + std::string("{\"order\": \"") + orders[i] +
              "\", \"placer\": \"" + placers[j] + "\", \"placer_s\": " + json_number(c.placer_s) +
              ", \"step_time_s\": " + json_number(c.step_s) + ", \"messages\": \"" + c.messages +
              "\", \"error\": \"" + json_escape(c.error) + "\"}";
    }
  }
  if (!best_name.empty())
    std::printf("fastest: %s, %s ms\n", best_name.c_str(), cell_text(best).c_str());
  return json + "]}";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Placers x traversal orders: placer wall time and simulated step time",
               "bench_placers");
  app.add_option("--models", o.models, "models (default: inception_v3, gpt2-small)")
      ->delimiter(',');
  app.add_option("--devices", o.devices, "devices K")->capture_default_str();
  app.add_option("--micro-batches", o.micro_batches, "micro-batches")->capture_default_str();
  app.add_option("--pipeline", o.pipeline, "gpipe or 1f1b")->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "samples per micro-batch")->capture_default_str();
  app.add_option("--device-preset", o.preset, "device description")->capture_default_str();
  app.add_option("--repeats", o.repeats, "placer runs to take the minimum of (within 1 s)")
      ->capture_default_str();
  app.add_option("--json", o.json_path, "also write the results as JSON to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (o.devices < 1 || o.micro_batches < 1 || o.repeats < 1) {
      interplace::throw_invalid("--devices, --micro-batches and --repeats must be >= 1");
    }
    const pl::DevicePreset& preset = pl::device_preset_by_name(o.preset);
    std::string json = "[";
    for (const std::string& model : models_to_run(o)) {
      json += (json.size() > 1 ? ", " : "") + bench_model(o, model, preset);
    }
    if (!o.json_path.empty()) {
      std::ofstream out(o.json_path);
      out << json << "]\n";
      if (!out) interplace::throw_runtime("cannot write " + o.json_path);
    }
  } catch (const interplace::Error& e) {
    std::fprintf(stderr, "bench_placers: error: %s\n", e.what());
    return e.kind() == interplace::ErrorKind::invalid_input ? 2 : 1;
  }
  return 0;
}
