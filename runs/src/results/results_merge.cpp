// Merging shard files: every input is checked before anything is written, then the
// configuration groups are copied whole (H5Ocopy, dimension-scale references rewritten to
// the copies) into a new file on the disk that appears under its name only when complete.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hdf5_io.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/runs/results_file.hpp"
#include "results_open.hpp"
#include "results_summary.hpp"

namespace interplace::runs {
namespace {

// What makes two result files come from different sweeps, or "" when they do not.
std::string sweep_difference(const ResultsSummary& a, const ResultsSummary& b) {
  if (a.spec_text != b.spec_text) return "spec " + a.spec_path + " vs " + b.spec_path;
  if (a.overrides != b.overrides) return "overrides '" + a.overrides + "' vs '" + b.overrides + "'";
  if (a.filter != b.filter) return "filter '" + a.filter + "' vs '" + b.filter + "'";
  return "";
}

}  // namespace

void merge_results_files(const std::vector<std::string>& inputs, const std::string& output,
                         bool allow_different_specs) {
  if (inputs.empty()) throw_invalid("merge needs at least one input file");
  if (std::filesystem::exists(output)) {
    throw_invalid(output + " exists already; merge never overwrites results");
  }
  std::map<std::string, std::string> owner;  // configuration id -> input holding it
  std::optional<ResultsSummary> first;
  bool different = false;
  for (const std::string& input : inputs) {
    const ResultsSummary summary = read_results_file(input);
    if (!first) {
      first = summary;
    } else if (summary.format_version != first->format_version) {
      // Groups of two layouts under one root would make the output's format_version wrong
      // for some of them.
      throw_invalid(input + " is result format version " + std::to_string(summary.format_version) +
                    " but " + inputs.front() + " is version " +
                    std::to_string(first->format_version) +
                    "; merge combines files of one version only. HINT: merge the files of "
                    "each version separately (the analysis reads both together)");
    } else if (const std::string what = sweep_difference(*first, summary); !what.empty()) {
      // The output's root attributes (spec, overrides, filter) come from the first input:
      // merging another sweep silently would make them describe configurations they did
      // not make.
      if (!allow_different_specs) {
        throw_invalid(input + " comes from another sweep than " + inputs.front() + " (" + what +
                      "); merge combines the shards of one sweep. HINT: --allow-different-specs "
                      "merges them anyway and records it in the file");
      }
      different = true;
    }
    for (const StoredConfig& c : summary.configs) {
      const auto [at, fresh] = owner.emplace(c.id, input);
      if (!fresh) {
        throw_invalid("configuration " + c.id + " (" + c.name + ") is in both " + at->second +
                      " and " + input + "; merge takes each configuration from one file only");
      }
    }
  }
  // Written on the disk under <output>.tmp, never held in memory whole, with the inputs'
  // bytes (and a quarter more for the new indexes) reserved first, so that a full disk is
  // one clear error before anything is written (hdf5_io.hpp, DiskFile).
  uint64_t input_bytes = 0;
  for (const std::string& input : inputs) {
    input_bytes += std::filesystem::file_size(input);
    for (const std::string& entry : journal_entries(input))
      input_bytes += std::filesystem::file_size(entry);
  }
  h5::DiskFile out = h5::DiskFile::create(output, input_bytes + input_bytes / 4 + (8u << 20));
  {
    const h5::Handle front = open_results_file(inputs.front(), false);
    h5::copy_attrs(front.get(), out.get());
  }
  // A merged file is no shard (shard_index and shard_count go), and a merged input's own
  // sources are replaced by this merge's inputs.
  for (const char* name : {"shard", "shard_index", "shard_count", "merged_sources"}) {
    if (H5Aexists(out.get(), name) > 0) H5Adelete(out.get(), name);
  }
  h5::write_attr(out.get(), "shard", std::string("merged"));
  h5::write_attr(out.get(), "merged_sources", inputs);
  if (different) h5::write_attr(out.get(), "merged_different_specs", int64_t{1});
  const h5::Handle configs = h5::create_index_group(out.get(), "configs");
  // The summary table is rebuilt from the copied groups (an input's own table may be
  // missing, from before tables existed), one row per group in the order copied.
  std::vector<SummaryRow> rows;
  for (const std::string& input : inputs) {
    const h5::Handle in = open_results_file(input, false);
    const h5::Handle in_configs = h5::open_group(in.get(), "configs");
    for (const std::string& id : h5::child_names(in_configs.get())) {
      h5::copy_group(in_configs.get(), configs.get(), id);
      rows.push_back(summarize_config(configs.get(), id));
    }
    // The input's journal: its configurations not yet folded into it.
    copy_journal_configs(journal_entries(input), configs.get(), rows);
    // The profiles the input's job measured (named per shard, so shards do not meet; a
    // name met twice is the same profile, from a file merged before).
    if (h5::exists(in.get(), "profiles")) {
      const h5::Handle in_profiles = h5::open_group(in.get(), "profiles");
      const h5::Handle profiles = h5::exists(out.get(), "profiles")
                                      ? h5::open_group(out.get(), "profiles")
                                      : h5::create_group(out.get(), "profiles");
      for (const std::string& name : h5::child_names(in_profiles.get())) {
        if (!h5::exists(profiles.get(), name)) {
          h5::copy_group(in_profiles.get(), profiles.get(), name);
        }
      }
    }
  }
  create_summary(out.get());
  append_summary(out.get(), rows);
  out.commit();
}

}  // namespace interplace::runs
