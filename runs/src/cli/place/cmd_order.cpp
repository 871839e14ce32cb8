// interplace order: the sequence in which a placer would visit a model's nodes.
#include <algorithm>
#include <memory>

#include "commands.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/orders.hpp"
#include "json_writer.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct OrderCommandOptions {
  ModelSelection model;
  std::string order;
  uint64_t seed = kDefaultSeed;
  std::string format;
  bool list = false;
};

const std::vector<std::string> kFormats = {"text", "json"};

std::string run_order(const OrderCommandOptions& o) {
  require_format(o.format, kFormats);
  if (o.list) {
    if (o.format == "json") {
      return json_array(placement::order_names(),
                        [](const std::string& name) {
                          return JsonObject()
                              .string("name", name)
                              .string("definition",
                                      placement::order_definition(placement::order_by_name(name)))
                              .str();
                        }) +
             "\n";
    }
    std::string out;
    for (const std::string& name : placement::order_names()) {
      out += name + std::string(15 - std::min<size_t>(name.size(), 14), ' ') +
             placement::order_definition(placement::order_by_name(name)) + "\n";
    }
    return out;
  }
  if (o.order.empty()) {
    throw_invalid("--order is required (valid: " + join(placement::order_names()) + ")");
  }
  const placement::OrderKind kind = placement::order_by_name(o.order);
  const placement::Graph graph = build_selected_model(o.model);
  // Without a device, critical-path weighs nodes by forward+backward FLOPs.
  const placement::Order order = placement::compute_order(graph, kind, {.seed = o.seed});
  if (o.format == "text") {
    std::string out;
    for (placement::NodeId id : order) out += graph.node(id).name + "\n";
    return out;
  }
  const std::string nodes = json_array(order, [&](placement::NodeId id) {
    return JsonObject().integer("id", id).string("name", graph.node(id).name).str();
  });
  return JsonObject()
             .string("model", o.model.label())
             .raw("model_options", model_options_json(o.model))
             .string("order", o.order)
             .unsigned_integer("seed", o.seed)
             .integer("node_count", graph.node_count())
             .boolean("topological", placement::is_topological(graph, order))
             .raw("nodes", nodes)
             .str() +
         "\n";
}

}  // namespace

Command add_order_command(CLI::App& root) {
  auto options = std::make_shared<OrderCommandOptions>();
  CLI::App* app =
      root.add_subcommand("order", "The traversal order of a model's nodes, one name per line");
  add_model_options(*app, options->model);
  app->add_option("--order", options->order,
                  "traversal order: " + join(placement::order_names()) +
                      " (critical-path weighs nodes by FLOPs here)");
  add_seed_option(*app, options->seed, "seed of random and random-topo");
  app->add_flag("--list", options->list,
                "print every order with its definition instead (text or json)");
  add_format_option(*app, options->format, kFormats);
  set_example(*app, "interplace order --model resnet20 --order critical-path");
  return {app, [options] { return run_order(*options); }};
}

}  // namespace interplace::runs::cli
