// `interplace` reduced to sweep, inspect and merge, with the fake runner instead of the
// runtime: the driver's end-to-end tests run through it (test_sweep.py) until and beside
// the real runtime.
#include <iostream>

#include <CLI/CLI.hpp>

#include "error_line.hpp"
#include "fake_runner.hpp"
#include "interplace/kernels/error.hpp"
#include "results/cmd_sweep.hpp"

namespace cli = interplace::runs::cli;

int main(int argc, char** argv) {
  try {
    CLI::App app("interplace with a fake runtime (tests only)", "interplace-fake");
    app.require_subcommand(1, 1);
    const std::vector<cli::Command> commands = {
        cli::add_sweep_command(app, interplace::runs::testing::fake_runner()),
        cli::add_inspect_command(app), cli::add_merge_command(app), cli::add_fold_command(app)};
    try {
      app.parse(argc, argv);
    } catch (const CLI::Success& help) {
      return app.exit(help);
    } catch (const CLI::ParseError& e) {
      std::cerr << "interplace: error: " << e.what() << "\n";
      return 2;
    }
    for (const cli::Command& command : commands) {
      if (command.app->parsed()) {
        std::cout << command.run() << std::flush;
        return command.exit_status ? command.exit_status() : 0;
      }
    }
    return 0;
  } catch (const cli::ReportedFailure& reported) {
    return reported.exit_code;
  } catch (const interplace::Error& e) {
    std::cerr << "interplace: error: " << e.what() << "\n";
    return e.kind() == interplace::ErrorKind::invalid_input ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "interplace: error: internal error: " << e.what() << "\n";
    return 1;
  }
}
