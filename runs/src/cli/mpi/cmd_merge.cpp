// interplace merge A B ... -o OUT: combines shard files into one result file.
#include <memory>

#include "cmd_sweep.hpp"
#include "interplace/runs/results_file.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {

Command add_merge_command(CLI::App& root) {
  struct MergeOptions {
    std::vector<std::string> inputs;
    std::string out;
  };
  auto o = std::make_shared<MergeOptions>();
  CLI::App* app = root.add_subcommand("merge", "Combine result files (shards) into one");
  app->add_option("inputs", o->inputs, "result files to combine")->required();
  app->add_option("--out,-o", o->out, "result file to create")->required();
  return {app, [o] {
            merge_results_files(o->inputs, o->out);
            const ResultsSummary merged = read_results_file(o->out);
            return o->out + ": " +
                   plural(static_cast<int64_t>(merged.configs.size()), "configuration",
                          "configurations") +
                   " from " + plural(static_cast<int64_t>(o->inputs.size()), "file", "files") +
                   "\n";
          }};
}

}  // namespace interplace::runs::cli
