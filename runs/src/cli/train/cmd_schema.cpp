// interplace schema: the configuration's schema as JSON (config_fields.hpp, schema_json):
// every key of a sweep spec, train's flags, the configuration id and result files, with the
// allowed values of the closed sets, and the pipeline registry's rows. Result files carry
// the same text as their root attribute `schema` (docs/results-format.md).
#include <memory>
#include <string>

#include "commands.hpp"
#include "interplace/runs/config_fields.hpp"

namespace interplace::runs::cli {

Command add_schema_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand(
      "schema",
      "Print the configuration schema as JSON: every spec key and train flag (kind, allowed "
      "values, default, place in the configuration id, result-file attribute) and every "
      "pipeline of the registry (docs/cli.md)");
  set_example(*app, "interplace schema");
  return {app, [] { return schema_json(); }};
}

}  // namespace interplace::runs::cli
