// interplace inspect FILE: one row per configuration of a result file.
#include <cmath>
#include <memory>

#include "cmd_sweep.hpp"
#include "interplace/runs/results_file.hpp"
#include "json_writer.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct InspectOptions {
  std::string file;
  std::string format;
};

const std::vector<std::string> kFormats = {"text", "json"};

std::string or_dash(double value, const std::string& text) {
  return std::isfinite(value) ? text : "-";
}

std::string inspect_text(const ResultsSummary& s, const std::string& file) {
  TextTable table({"id", "name", "status", "step", "step (sim)", "samples/s", "final loss",
                   "eval acc", "reason"},
                  {1, 2, 8});
  int ok = 0, failed = 0, skipped = 0, diverged = 0;
  for (const StoredConfig& c : s.configs) {
    ok += c.status == "ok";
    failed += c.status == "failed";
    skipped += c.status == "skipped";
    diverged += c.status == "diverged";
    table.add_row({c.id, c.name, c.status,
                   or_dash(c.median_step_s, format_seconds(c.median_step_s)),
                   or_dash(c.simulated_step_s, format_seconds(c.simulated_step_s)),
                   or_dash(c.samples_per_s, format_fixed(c.samples_per_s, 1)),
                   or_dash(c.final_loss, format_fixed(c.final_loss, 4)),
                   or_dash(c.eval_accuracy, format_percent(c.eval_accuracy)), c.reason});
  }
  return file + ": format " + s.format_name + " v" + std::to_string(s.format_version) + ", shard " +
         s.shard + ", spec " + s.spec_path + "\n" +
         plural(static_cast<int64_t>(s.configs.size()), "configuration", "configurations") + ": " +
         std::to_string(ok) + " ok, " + std::to_string(failed) + " failed, " +
         std::to_string(skipped) + " skipped" +
         (diverged > 0 ? ", " + std::to_string(diverged) + " diverged" : "") + "\n\n" + table.str();
}

std::string inspect_json(const ResultsSummary& s, const std::string& file) {
  const std::string configs = json_array(s.configs, [](const StoredConfig& c) {
    return JsonObject()
        .string("id", c.id)
        .integer("index", c.index)
        .string("name", c.name)
        .string("status", c.status)
        .number("median_step_s", c.median_step_s)
        .number("simulated_step_s", c.simulated_step_s)
        .number("samples_per_s", c.samples_per_s)
        .number("final_loss", c.final_loss)
        .number("eval_accuracy", c.eval_accuracy)
        .string("reason", c.reason)
        .str();
  });
  return JsonObject()
             .string("file", file)
             .string("format_name", s.format_name)
             .integer("format_version", s.format_version)
             .string("shard", s.shard)
             .string("spec_path", s.spec_path)
             .raw("configs", configs)
             .str() +
         "\n";
}

}  // namespace

Command add_inspect_command(CLI::App& root) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* app = root.add_subcommand("inspect", "List the configurations of a result file");
  app->add_option("file", o->file, "result file (HDF5)")->required();
  add_format_option(*app, o->format, kFormats);
  set_example(*app, "interplace inspect sweep.h5 --format json");
  return {app, [o] {
            require_format(o->format, kFormats);
            const ResultsSummary summary = read_results_file(o->file);
            return o->format == "json" ? inspect_json(summary, o->file)
                                       : inspect_text(summary, o->file);
          }};
}

}  // namespace interplace::runs::cli
