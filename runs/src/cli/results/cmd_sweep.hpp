// The result-file subcommands: sweep (needs MPI and a runner), inspect and merge.
#pragma once

#include "commands.hpp"
#include "interplace/runs/sweep.hpp"

namespace interplace::runs::cli {

// `runner` runs each configuration: runtime_runner() in the CLI, a test double in tests.
Command add_sweep_command(CLI::App& root, SweepRunner runner);
Command add_inspect_command(CLI::App& root);
Command add_merge_command(CLI::App& root);
Command add_fold_command(CLI::App& root);

}  // namespace interplace::runs::cli
