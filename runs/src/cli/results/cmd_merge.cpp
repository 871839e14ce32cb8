// interplace merge A B ... -o OUT: combines shard files into one result file.
#include <memory>

#include "cmd_sweep.hpp"
#include "interplace/runs/results_file.hpp"
#include "json_writer.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

const std::vector<std::string> kFormats = {"text", "json"};

}  // namespace

Command add_merge_command(CLI::App& root) {
  struct MergeOptions {
    std::vector<std::string> inputs;
    std::string out;
    std::string format;
    bool allow_different_specs = false;
  };
  auto o = std::make_shared<MergeOptions>();
  CLI::App* app = root.add_subcommand("merge", "Combine result files (shards) into one");
  app->add_option("inputs", o->inputs, "result files to combine")->required();
  app->add_option("--out,-o", o->out, "result file to create")->required();
  app->add_flag("--allow-different-specs", o->allow_different_specs,
                "merge files of different sweeps (spec, overrides or filter) too; the output "
                "records it (merged_different_specs = 1) and keeps the first file's spec");
  add_format_option(*app, o->format, kFormats);
  set_example(*app, "interplace merge shard-0.h5 shard-1.h5 --out sweep.h5");
  return {app, [o] {
            require_format(o->format, kFormats);  // before the output file exists
            merge_results_files(o->inputs, o->out, o->allow_different_specs);
            const ResultsSummary merged = read_results_file(o->out);
            const auto configurations = static_cast<int64_t>(merged.configs.size());
            if (o->format == "json") {
              return JsonObject()
                         .string("out", o->out)
                         .raw("inputs", json_array(o->inputs, json_string))
                         .integer("configurations", configurations)
                         .str() +
                     "\n";
            }
            return o->out + ": " + plural(configurations, "configuration", "configurations") +
                   " from " + plural(static_cast<int64_t>(o->inputs.size()), "file", "files") +
                   "\n";
          }};
}

Command add_fold_command(CLI::App& root) {
  struct FoldOptions {
    std::string file;
    std::string format;
  };
  auto o = std::make_shared<FoldOptions>();
  CLI::App* app = root.add_subcommand(
      "fold", "Fold a result file's journal (FILE.journal/, a large sweep's appends) into it");
  app->add_option("file", o->file, "result file (HDF5)")->required();
  add_format_option(*app, o->format, kFormats);
  set_example(*app, "interplace fold sweep.h5");
  return {app, [o] {
            require_format(o->format, kFormats);
            read_results_file(o->file);  // the format check, and a journal that reads
            const int64_t folded = fold_journal(o->file);
            if (o->format == "json") {
              return JsonObject().string("file", o->file).integer("folded", folded).str() + "\n";
            }
            return o->file + ": " + plural(folded, "configuration", "configurations") +
                   " folded from its journal\n";
          }};
}

}  // namespace interplace::runs::cli
