// interplace: the command line of the benchmark suite (docs/cli.md). Every failure ends as
// one line "interplace: error: ..." on stderr with exit status 2 (bad input: unknown names,
// impossible requests, bad numbers, a malformed file) or 1 (a runtime failure).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "error_line.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/failure.hpp"
#include "model_options.hpp"
#ifdef INTERPLACE_HAVE_RUNTIME
#include "results/cmd_sweep.hpp"
#endif

#ifdef INTERPLACE_HAVE_RUNTIME
namespace interplace::runs::cli {
Command add_profile_command(CLI::App& root);  // mpi/cmd_profile.cpp
}  // namespace interplace::runs::cli
#endif

namespace {

constexpr int kExitInvalid = 2;

namespace cli = interplace::runs::cli;

// Under mpirun or srun, command-line errors are the same on every rank: only the first
// rank reports them. MPI is not initialised yet, so the launcher's variables tell.
bool is_launcher_rank_zero() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::string(value) == "0";
  }
  return true;
}

int fail_everywhere_alike(int status, const std::string& message) {
  return is_launcher_rank_zero() ? cli::print_error_line(status, message) : status;
}

// The command whose options were being read, for pointing at its --help.
std::string help_hint(const std::vector<cli::Command>& commands) {
  for (const cli::Command& command : commands) {
    if (command.app->parsed()) return " (see interplace " + command.app->get_name() + " --help)";
  }
  return " (see interplace --help)";
}

int run(int argc, char** argv) {
  CLI::App app(
      "interplace: device placement, traversal orders and backprop strategies for "
      "model-parallel training (docs/cli.md)",
      "interplace");
  app.set_version_flag("--version", std::string("interplace ") + INTERPLACE_VERSION);
  bool list_models = false;
  app.add_flag("--list-models", list_models, "print the model catalog and exit");
  app.require_subcommand(0, 1);
  std::vector<cli::Command> commands = {cli::add_graph_command(app), cli::add_order_command(app),
                                        cli::add_place_command(app),
                                        cli::add_simulate_command(app)};
#ifdef INTERPLACE_HAVE_RUNTIME
  commands.push_back(cli::add_profile_command(app));
  commands.push_back(cli::add_train_command(app));
  commands.push_back(cli::add_schema_command(app));
  commands.push_back(cli::add_sweep_command(app, interplace::runs::runtime_runner()));
  commands.push_back(cli::add_inspect_command(app));
  commands.push_back(cli::add_merge_command(app));
  commands.push_back(cli::add_fold_command(app));
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& help) {
    return app.exit(help);  // --help, --version: printed on stdout, exit 0
  } catch (const CLI::ParseError& e) {
    return fail_everywhere_alike(kExitInvalid, e.what() + help_hint(commands));
  }
  for (const cli::Command& command : commands) {
    if (command.app->parsed()) {
      if (list_models)
        return cli::print_error_line(kExitInvalid, "--list-models takes no subcommand");
      std::cout << command.run() << std::flush;
      return command.exit_status ? command.exit_status() : 0;
    }
  }
  if (list_models) {
    std::cout << cli::catalog_text() << std::flush;
    return 0;
  }
  std::string names;
  for (const cli::Command& command : commands) {
    names += (names.empty() ? "" : ", ") + command.app->get_name();
  }
  return fail_everywhere_alike(kExitInvalid,
                               "a subcommand is required: " + names + " (see interplace --help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const cli::ReportedFailure& reported) {
    return reported.exit_code;  // its error line is printed (error_line.hpp)
  } catch (...) {
    // The one classification the sweep and train use too (kernels/failure.hpp).
    const interplace::Failure failure =
        interplace::classify_failure(std::current_exception(), false);
    return cli::print_error_line(failure.exit_code, failure.message);
  }
}
