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
};

void add_model_options(CLI::App& app, ModelSelection& selection);

// Samples per micro-batch; throws invalid_input (with a HINT) when --micro-batches does not
// divide --batch-size.
int64_t selected_micro_batch_size(const ModelSelection& selection);
// The graph of one micro-batch. Throws invalid_input when --model is missing or unknown
// (listing the catalog), or when the options do not fit the model.
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
