// The subcommands. Each adds its CLI11 sub-app to the root and returns what runs it once
// the command line is parsed: the full output text, built before anything is printed so
// that an error never leaves half an output behind.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace interplace::runs::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<std::string()> run;
  // The exit status once run() returned (unset: 0); for outcomes that are not errors but
  // still must not read as success (sweep: a dry run with nothing to run, a signal).
  std::function<int()> exit_status = {};
};

Command add_graph_command(CLI::App& root);
Command add_order_command(CLI::App& root);
Command add_place_command(CLI::App& root);
Command add_simulate_command(CLI::App& root);
#ifdef INTERPLACE_HAVE_RUNTIME
Command add_train_command(CLI::App& root);
Command add_schema_command(CLI::App& root);  // train/cmd_schema.cpp
#endif

// --format with the given choices (the first is the default).
void add_format_option(CLI::App& app, std::string& format, const std::vector<std::string>& valid);
// Throws invalid_input naming the valid formats.
void require_format(const std::string& format, const std::vector<std::string>& valid);
// Ends `app`'s --help with one command to copy (tests run the ones that need no MPI).
void set_example(CLI::App& app, const std::string& command);

}  // namespace interplace::runs::cli
