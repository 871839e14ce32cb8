// The --model option, the options that mirror placement::ModelOptions (CLI names are its
// snake_case fields with dashes), --micro-batches, and the model catalog listing.
//
// --batch-size is the mini-batch (samples per optimiser step) in every subcommand; the
// graph is built for one micro-batch of batch_size / micro_batches samples
// (micro_batch_size in run_defaults.hpp), as `train` runs it.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::runs::cli {

struct ModelSelection {
  std::string model;
  placement::ModelOptions options;  // options.batch_size: samples per mini-batch
  int micro_batches = 1;            // per mini-batch
  // Replicas of the pipeline (simulate --data-parallel): options.batch_size is then the
  // global mini-batch and the graph one replica's micro-batch.
  int data_parallel = 1;
  // --graph-file: the network of a graph file (docs/your-network.md) instead of --model.
  std::string graph_file = {};
  // Set by build_selected_model from a graph file: its graph's name and family.
  mutable std::string graph_name = {};
  mutable std::string graph_family = {};

  // What outputs call the model: --model, or the graph file's graph name.
  const std::string& label() const { return graph_file.empty() ? model : graph_name; }
};

void add_model_options(CLI::App& app, ModelSelection& selection);

// Samples per micro-batch (of one replica with --data-parallel); throws invalid_input (with
// a HINT) when --micro-batches (x --data-parallel) does not divide --batch-size.
int64_t selected_micro_batch_size(const ModelSelection& selection);
// The graph of one micro-batch. Throws invalid_input when --model is missing or unknown
// (listing the catalog), or when the options do not fit the model. With --graph-file: the
// file's graph rebuilt for the micro-batch (placement::rebatch_graph); --model and the
// options that change a zoo model's shapes are refused beside it.
placement::Graph build_selected_model(const ModelSelection& selection);
// Throws invalid_input for an unknown name, listing the catalog.
const placement::ModelInfo& model_info(std::string_view name);

// {"batch_size", "micro_batches", "micro_batch_size", "in_channels", ...}: the values given
// (0 = the model's default).
std::string model_options_json(const ModelSelection& selection);

std::string catalog_text();
// [{"name", "family", "reference_parameters", "description", "seeded"}]
std::string catalog_json();

}  // namespace interplace::runs::cli
