// interplace sweep SPEC --out FILE: runs every configuration of a sweep spec under
// mpirun/srun and appends each to the result file (docs/cli.md, "sweep").
#include "cmd_sweep.hpp"

#include <iostream>
#include <memory>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/results_file.hpp"
#include "json_writer.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

struct SweepCommandOptions {
  std::string spec;
  std::string out;
  std::string shard = "0/1";
  bool resume = false;
  bool dry_run = false;
  std::string format;
};

const std::vector<std::string> kFormats = {"text", "json"};

std::string dry_run_output(const SweepSpec& spec, const Shard& shard, const std::string& format) {
  std::vector<const SweepConfig*> selected;
  for (const SweepConfig& c : spec.configs) {
    if (shard.takes(c.index)) selected.push_back(&c);
  }
  if (format == "json") {
    return json_array(selected,
                      [](const SweepConfig* c) {
                        return JsonObject()
                            .integer("index", c->index)
                            .string("id", c->id)
                            .string("name", c->train.display_name())
                            .integer("repeat", c->repeat)
                            .string("canonical_parameters",
                                    canonical_parameters(c->train, c->repeat))
                            .str();
                      }) +
           "\n";
  }
  TextTable table({"index", "id", "name", "repeat"}, {1, 2});
  for (const SweepConfig* c : selected) {
    table.add_row(
        {std::to_string(c->index), c->id, c->train.display_name(), std::to_string(c->repeat)});
  }
  return table.str() +
         plural(static_cast<int64_t>(selected.size()), "configuration", "configurations") + " of " +
         std::to_string(spec.configs.size()) + " in shard " + shard.str() + "\n";
}

std::string summary_output(const SweepCommandOptions& o, const SweepSummary& s) {
  if (o.format == "json") {
    return JsonObject()
               .string("out", o.out)
               .string("shard", o.shard)
               .integer("selected", s.selected)
               .integer("already_done", s.already_done)
               .integer("ok", s.ok)
               .integer("failed", s.failed)
               .integer("skipped", s.skipped)
               .integer("diverged", s.diverged)
               .number("wall_s", s.wall_s)
               .number("append_s", s.append_s)
               .str() +
           "\n";
  }
  return o.out + ": " + std::to_string(s.ok) + " ok, " + std::to_string(s.failed) + " failed, " +
         std::to_string(s.skipped) + " skipped" +
         (s.diverged > 0 ? ", " + std::to_string(s.diverged) + " diverged" : "") +
         (s.already_done > 0 ? ", " + std::to_string(s.already_done) + " already there" : "") +
         " (" + plural(s.selected, "configuration", "configurations") + " in shard " + o.shard +
         ") in " + format_seconds(s.wall_s) + "\n";
}

std::string run_sweep_command(const SweepCommandOptions& o, const SweepRunner& runner) {
  require_format(o.format, kFormats);
  const Shard shard = parse_shard(o.shard);
  if (o.dry_run) return dry_run_output(load_sweep_spec(o.spec), shard, o.format);
  if (o.out.empty()) throw_invalid("--out FILE is required (or --dry-run)");
  MpiSession session(nullptr, nullptr);
  try {
    // Every rank parses the spec: a bad one fails everywhere alike, before anything runs.
    const SweepSpec spec = load_sweep_spec(o.spec);
    const SweepOptions options{o.out, shard, o.resume};
    const SweepSummary summary = run_sweep(spec, options, runner, MPI_COMM_WORLD, std::cerr);
    return session.world_rank() == 0 ? summary_output(o, summary) : "";
  } catch (...) {
    // Every rank fails with the same error (run_sweep agrees on it): only rank 0 says so.
    if (session.world_rank() != 0) std::cerr.rdbuf(nullptr);
    throw;
  }
}

}  // namespace

Command add_sweep_command(CLI::App& root, SweepRunner runner) {
  auto o = std::make_shared<SweepCommandOptions>();
  CLI::App* app = root.add_subcommand(
      "sweep", "Run every configuration of a sweep spec (under mpirun/srun) into a result file");
  app->add_option("spec", o->spec, "sweep specification (TOML; docs/cli.md)")->required();
  app->add_option("--out,-o", o->out, "result file (HDF5) to create, or to continue with --resume");
  app->add_option("--shard", o->shard, "run the configurations with index % n == i")
      ->capture_default_str();
  app->add_flag("--resume", o->resume,
                "continue an existing result file, skipping the configurations it holds");
  app->add_flag("--dry-run", o->dry_run, "list the expanded configurations and exit");
  add_format_option(*app, o->format, kFormats);
  return {app, [o, runner = std::move(runner)] { return run_sweep_command(*o, runner); }};
}

}  // namespace interplace::runs::cli
