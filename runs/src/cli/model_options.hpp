// The --model option, the options that mirror placement::ModelOptions (CLI names are its
// snake_case fields with dashes), and the model catalog listing.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::runs::cli {

struct ModelSelection {
  std::string model;
  placement::ModelOptions options;
};

void add_model_options(CLI::App& app, ModelSelection& selection);

// Throws invalid_input when --model is missing or unknown (listing the catalog), or when
// the options do not fit the model.
placement::Graph build_selected_model(const ModelSelection& selection);
// Throws invalid_input for an unknown name, listing the catalog.
const placement::ModelInfo& model_info(std::string_view name);

// {"batch_size", "in_channels", ...}: the values given (0 = the model's default).
std::string model_options_json(const placement::ModelOptions& options);

std::string catalog_text();
std::string catalog_json();  // [{"name", "family", "reference_parameters", "description"}]

}  // namespace interplace::runs::cli
