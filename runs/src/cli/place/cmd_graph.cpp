// interplace graph: a model's graph as a summary with its structural statistics (text),
// as JSON, or as Graphviz DOT; --list prints the model catalog.
#include <map>
#include <memory>

#include "commands.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_export.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/graph_stats.hpp"
#include "interplace/placement/report_json.hpp"
#include "json_writer.hpp"
#include "model_options.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct GraphOptions {
  ModelSelection model;
  std::string format;
  bool stats = false;
  bool list = false;
  std::string save_graph;  // --save-graph FILE: the graph file (docs/your-network.md)
};

// The catalog's entry for a zoo model; for a graph file its name and family, no reference.
struct Described {
  std::string name, family, description;
  int64_t reference_parameters = -1;  // -1: none (a graph file)
};

Described describe(const ModelSelection& selection) {
  if (!selection.graph_file.empty()) {
    return {selection.graph_name, selection.graph_family, "graph file " + selection.graph_file, -1};
  }
  const placement::ModelInfo& info = model_info(selection.model);
  return {info.name, info.family, info.description, info.reference_parameters};
}

const std::vector<std::string> kFormats = {"text", "json", "dot"};

struct OpTotals {
  int node_count = 0;
  int64_t parameter_count = 0;
  int64_t forward_flops = 0;
  int64_t output_bytes = 0;
};

std::map<std::string, OpTotals> totals_by_op(const placement::Graph& graph) {
  std::map<std::string, OpTotals> totals;
  for (const placement::Node& node : graph.nodes()) {
    OpTotals& t = totals[node.op];
    ++t.node_count;
    t.parameter_count += node.parameter_count;
    t.forward_flops += node.forward_flops;
    t.output_bytes += node.output_bytes;
  }
  return totals;
}

int64_t activation_bytes(const placement::Graph& graph) {
  int64_t bytes = 0;
  for (const placement::Node& node : graph.nodes()) bytes += node.output_bytes;
  return bytes;
}

std::string graph_text(const GraphOptions& o, const placement::Graph& graph) {
  const Described info = describe(o.model);
  const placement::GraphStats stats = placement::compute_graph_stats(graph);
  TextTable summary({}, {1});
  auto row = [&](const std::string& key, const std::string& value) {
    summary.add_row({key, value});
  };
  row("batch size", std::to_string(o.model.options.batch_size) + " per mini-batch, " +
                        plural(o.model.micro_batches, "micro-batch", "micro-batches") + " of " +
                        std::to_string(graph.batch_size()) + " (the graph is one micro-batch)");
  row("nodes", std::to_string(stats.node_count));
  row("edges", std::to_string(stats.edge_count));
  row("sources / sinks",
      std::to_string(graph.sources().size()) + " / " + std::to_string(graph.sinks().size()));
  row("depth", std::to_string(stats.depth) + " (nodes on the longest path)");
  row("max width", std::to_string(stats.max_width) + " (most nodes on one depth level)");
  row("mean branching",
      format_fixed(stats.mean_branching_factor, 3) + " (out-degree of nodes with successors)");
  row("critical-path share",
      format_percent(stats.critical_path_cost_share) + " (of forward+backward FLOPs)");
  row("parameters", format_count(graph.total_parameter_count()) +
                        (info.reference_parameters < 0
                             ? std::string()
                             : " (reference " + format_count(info.reference_parameters) +
                                   " at default options)"));
  if (const std::string opaque = placement::opaque_summary(graph); !opaque.empty()) {
    row("no kernel layer", opaque + "; simulate and simulate-only sweeps take them, train refuses");
  }
  row("forward FLOPs", format_scaled(static_cast<double>(graph.total_forward_flops()), "FLOP"));
  row("backward FLOPs", format_scaled(static_cast<double>(graph.total_backward_flops()), "FLOP"));
  row("activations", format_bytes(static_cast<double>(activation_bytes(graph))) +
                         " (all node outputs, one micro-batch)");
  std::string out = graph.name() + " (" + info.family + "): " + info.description + "\n";
  out += summary.str();
  if (o.stats) {
    TextTable ops({"op", "nodes", "params", "forward FLOPs", "outputs"});
    for (const auto& [op, t] : totals_by_op(graph)) {
      ops.add_row({op, std::to_string(t.node_count), format_count(t.parameter_count),
                   format_scaled(static_cast<double>(t.forward_flops), "FLOP"),
                   format_bytes(static_cast<double>(t.output_bytes))});
    }
    out += "\n" + ops.str();
  }
  return out;
}

std::string graph_json(const GraphOptions& o, const placement::Graph& graph) {
  const Described info = describe(o.model);
  JsonObject out;
  out.string("model", info.name).string("family", info.family);
  if (!o.model.graph_file.empty()) out.string("graph_file", o.model.graph_file);
  out.raw("model_options", model_options_json(o.model));
  if (info.reference_parameters < 0) {
    out.raw("reference_parameters", "null");
  } else {
    out.integer("reference_parameters", info.reference_parameters);
  }
  std::vector<std::string> opaque;
  for (placement::NodeId id : placement::opaque_nodes(graph)) {
    opaque.push_back(graph.node(id).name);
  }
  out.raw("opaque_nodes", json_array(opaque, [](const std::string& s) { return json_string(s); }))
      .integer("parameter_count", graph.total_parameter_count())
      .integer("forward_flops", graph.total_forward_flops())
      .integer("backward_flops", graph.total_backward_flops())
      .integer("activation_bytes", activation_bytes(graph))
      .raw("graph", placement::to_json(graph));
  if (o.stats) {
    std::vector<std::string> ops;
    for (const auto& [op, t] : totals_by_op(graph)) {
      ops.push_back(JsonObject()
                        .string("op", op)
                        .integer("node_count", t.node_count)
                        .integer("parameter_count", t.parameter_count)
                        .integer("forward_flops", t.forward_flops)
                        .integer("output_bytes", t.output_bytes)
                        .str());
    }
    out.raw("stats", placement::to_json(placement::compute_graph_stats(graph)))
        .raw("ops", json_array(ops, [](const std::string& s) { return s; }));
  }
  return out.str() + "\n";
}

std::string run_graph(const GraphOptions& o) {
  require_format(o.format, kFormats);
  if (o.list) {
    if (o.format == "dot") throw_invalid("--list prints text or json, not dot");
    return o.format == "json" ? catalog_json() + "\n" : catalog_text();
  }
  const placement::Graph graph = build_selected_model(o.model);
  if (!o.save_graph.empty()) {
    placement::write_graph_file(o.save_graph, graph, describe(o.model).family);
  }
  if (o.format == "dot") return placement::to_dot(graph);
  return o.format == "json" ? graph_json(o, graph) : graph_text(o, graph);
}

}  // namespace

Command add_graph_command(CLI::App& root) {
  auto options = std::make_shared<GraphOptions>();
  CLI::App* app = root.add_subcommand(
      "graph", "A model's graph: summary and structural statistics, JSON or Graphviz DOT");
  add_model_options(*app, options->model);
  add_format_option(*app, options->format, kFormats);
  app->add_flag("--stats", options->stats,
                "text: add a per-op breakdown; json: add the statistics and the breakdown");
  app->add_flag("--list", options->list, "print the model catalog instead (text or json)");
  app->add_option("--save-graph", options->save_graph,
                  "also write the graph (one micro-batch) as a graph file that --graph-file "
                  "reads (docs/your-network.md); overwritten");
  set_example(*app, "interplace graph --model resnet20 --batch-size 128 --micro-batches 4 --stats");
  return {app, [options] { return run_graph(*options); }};
}

}  // namespace interplace::runs::cli
