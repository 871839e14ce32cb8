#include "model_options.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/run_defaults.hpp"
#include "json_writer.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

std::string catalog_names() {
  std::string names;
  for (const placement::ModelInfo& info : placement::model_catalog()) {
    names += (names.empty() ? "" : ", ") + info.name + (info.seeded ? "[:SEED]" : "");
  }
  return names;
}

}  // namespace

void add_model_options(CLI::App& app, ModelSelection& selection) {
  placement::ModelOptions& o = selection.options;
  o.batch_size = kDefaultBatchSize;  // the zoo's own default is 1; train's has always been 32
  app.add_option("--model", selection.model, "model from the catalog: " + catalog_names())
      ->group("Model");
  app.add_option("--graph-file", selection.graph_file,
                 "a graph file (interplace graph --save-graph, or the importers of importers/: "
                 "PyTorch, ONNX) instead of --model; docs/your-network.md")
      ->group("Model");
  app.add_option("--batch-size", o.batch_size,
                 "samples per mini-batch (one optimiser step), split into --micro-batches")
      ->capture_default_str()
      ->group("Model");
  app.add_option("--micro-batches", selection.micro_batches,
                 "micro-batches per mini-batch; the graph is one micro-batch of "
                 "batch-size / micro-batches samples")
      ->capture_default_str()
      ->group("Model");
  // One flag per spec model option (kModelOptionFields), so the two never differ.
  for (const ModelOptionField& f : kModelOptionFields) {
    std::string flag = std::string("--") + f.key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (f.integer != nullptr) {
      app.add_option(flag, o.*f.integer, f.help)->group("Model");
    } else {
      app.add_option(flag, o.*f.real, f.help)->capture_default_str()->group("Model");
    }
  }
}

const placement::ModelInfo& model_info(std::string_view name) {
  return placement::find_model(name);  // "enas-cnn:7" included
}

int64_t selected_micro_batch_size(const ModelSelection& selection) {
  return micro_batch_size(selection.options.batch_size, selection.micro_batches, kBatchFlags,
                          selection.data_parallel);
}

placement::Graph build_selected_model(const ModelSelection& selection) {
  if (!selection.graph_file.empty()) {
    if (!selection.model.empty()) {
      throw_invalid("--model '" + selection.model + "' and --graph-file '" + selection.graph_file +
                    "' both name a network; give one");
    }
    placement::check_graph_file_options(selection.options, "--");
    const int64_t micro_batch = selected_micro_batch_size(selection);
    placement::GraphFile file = placement::read_graph_file(selection.graph_file);
    selection.graph_name = file.graph.name();
    selection.graph_family = file.family;
    return placement::rebatch_graph(file.graph, micro_batch);
  }
  if (selection.model.empty()) {
    throw_invalid("--model is required, or --graph-file (valid models: " + catalog_names() + ")");
  }
  model_info(selection.model);
  // The flags' names; build_model checks the rest (placement::check_model_options).
  placement::check_multiplier("--width-multiplier", selection.options.width_multiplier);
  placement::check_multiplier("--depth-multiplier", selection.options.depth_multiplier);
  placement::ModelOptions options = selection.options;
  options.batch_size = selected_micro_batch_size(selection);
  return placement::build_model(selection.model, options);
}

std::string model_options_json(const ModelSelection& selection) {
  const placement::ModelOptions& options = selection.options;
  JsonObject json;
  json.integer("batch_size", options.batch_size)
      .integer("micro_batches", selection.micro_batches)
      .integer("micro_batch_size", selected_micro_batch_size(selection));
  for (const ModelOptionField& f : kModelOptionFields) {
    if (f.integer != nullptr) {
      json.integer(f.key, options.*f.integer);
    } else {
      json.number(f.key, options.*f.real);
    }
  }
  return json.str();
}

std::string catalog_text() {
  TextTable table({"model", "family", "reference params", "description"}, {1, 3});
  for (const placement::ModelInfo& info : placement::model_catalog()) {
    // A seeded family is named NAME:SEED (docs/models.md); its count is seed 0's.
    table.add_row({info.name + (info.seeded ? "[:SEED]" : ""), info.family,
                   format_count(info.reference_parameters), info.description});
  }
  return table.str();
}

std::string catalog_json() {
  return json_array(placement::model_catalog(), [](const placement::ModelInfo& info) {
    return JsonObject()
        .string("name", info.name)
        .string("family", info.family)
        .integer("reference_parameters", info.reference_parameters)
        .string("description", info.description)
        .boolean("seeded", info.seeded)
        .str();
  });
}

}  // namespace interplace::runs::cli
