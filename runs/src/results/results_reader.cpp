// Reading result files back: the format check first (so that a wrong file gets one clear
// line, not an HDF5 error stack), then one row per configuration, from the file's summary
// table where it describes the groups (docs/results-format.md, "/summary").
#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "hdf5_io.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/results_format.hpp"
#include "results_open.hpp"
#include "results_summary.hpp"

namespace interplace::runs {
namespace {

// A string from a file, quoted, with control characters and non-ASCII bytes as \xNN so
// that a damaged or hostile file cannot write to the terminal.
std::string escaped(const std::string& text) {
  std::string out = "'";
  for (const unsigned char ch : text) {
    if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'') {
      out += static_cast<char>(ch);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out + "'";
}

// The statuses a configuration group may have (docs/results-format.md).
constexpr std::array<std::string_view, 4> kStatuses = {"ok", "failed", "skipped", "diverged"};

// The fields of a summary row that the list of configurations holds, checked: the
// attributes every configuration has (id, index, a known status); missing or damaged, the
// file is damaged and every count made from it would be wrong. `where` names the row's
// source (the group, or the summary table's row).
StoredConfig stored_config(const SummaryRow& row, const std::string& where) {
  if (row.id.empty()) throw_invalid(where + ": attribute 'id' is missing or empty");
  if (row.index < 0) throw_invalid(where + ": attribute 'index' is missing or not an integer");
  if (row.status.empty()) throw_invalid(where + ": attribute 'status' is missing");
  if (std::find(kStatuses.begin(), kStatuses.end(), row.status) == kStatuses.end()) {
    throw_invalid(where + ": attribute 'status' is " + escaped(row.status) +
                  " (valid: ok, failed, skipped, diverged)");
  }
  return StoredConfig{.id = row.id,
                      .index = row.index,
                      .name = row.name,
                      .status = row.status,
                      .reason = row.reason,
                      .median_step_s = row.step_time_s,
                      .samples_per_s = row.samples_per_s,
                      .final_loss = row.final_loss,
                      .eval_accuracy = row.eval_accuracy,
                      .simulated_step_s = row.pred_step_time_s};
}

StoredConfig read_config(hid_t configs, const std::string& id) {
  return stored_config(summarize_config(configs, id), "group /configs/" + id);
}

// The configurations of `file` from its summary table in one read per column, when the
// table describes exactly the groups of /configs (the same ids); nullopt otherwise (a file
// from before the table, or one whose groups were changed by hand): then they are read
// group by group.
std::optional<std::vector<StoredConfig>> configs_from_summary(hid_t file, hid_t configs) {
  const int64_t rows = summary_rows(file);
  if (rows < 0) return std::nullopt;
  std::vector<std::string> groups = h5::child_names(configs);
  if (static_cast<int64_t>(groups.size()) != rows) return std::nullopt;
  const h5::Handle table = h5::open_group(file, "summary");
  std::vector<std::string> ids = h5::read_strings(table.get(), "id");
  {
    std::vector<std::string> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    std::sort(groups.begin(), groups.end());
    if (sorted != groups) return std::nullopt;
  }
  const auto texts = [&](const char* name) { return h5::read_strings(table.get(), name); };
  const auto reals = [&](const char* name) { return h5::read_doubles(table.get(), name); };
  const std::vector<std::string> names = texts("name"), statuses = texts("status"),
                                 reasons = texts("reason");
  const std::vector<int64_t> indices = h5::read_ints(table.get(), "index");
  const std::vector<double> step = reals("step_time_s"), rate = reals("samples_per_s"),
                            loss = reals("final_loss"), accuracy = reals("eval_accuracy"),
                            simulated = reals("pred_step_time_s");
  const size_t n = ids.size();
  for (const size_t size :
       {names.size(), statuses.size(), reasons.size(), indices.size(), step.size(), rate.size(),
        loss.size(), accuracy.size(), simulated.size()}) {
    if (size != n) throw_runtime("the summary table's columns differ in length");
  }
  std::vector<StoredConfig> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    SummaryRow row;
    row.id = ids[i];
    row.index = indices[i];
    row.name = names[i];
    row.status = statuses[i];
    row.reason = reasons[i];
    row.step_time_s = step[i];
    row.samples_per_s = rate[i];
    row.final_loss = loss[i];
    row.eval_accuracy = accuracy[i];
    row.pred_step_time_s = simulated[i];
    out.push_back(stored_config(
        row, "/summary row " + std::to_string(i) + " (group /configs/" + ids[i] + ")"));
  }
  return out;
}

}  // namespace

h5::Handle open_results_file(const std::string& path, bool writable) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw_invalid(path + ": no such file");
  check_input_file(path, "result file", kMaxResultsInputBytes);
  if (!h5::is_hdf5(path)) {
    throw_invalid(path + " is not an HDF5 file (an interplace result file was expected)");
  }
  h5::Handle file;
  try {
    file = h5::open_file(path, writable);
  } catch (const Error&) {
    throw_runtime(path + ": the HDF5 file cannot be opened (damaged or truncated?)");
  }
  const std::optional<std::string> name = h5::read_attr_string(file.get(), "format_name");
  const std::optional<int64_t> version = h5::read_attr_int(file.get(), "format_version");
  if (!name || !version) {
    throw_invalid(path +
                  " is an HDF5 file but not an interplace result file (no format_name "
                  "or format_version attribute)");
  }
  require_supported_results_format(path, *name, *version);
  if (!h5::exists(file.get(), "configs")) {
    throw_runtime(path + " is damaged: it has no /configs group");
  }
  return file;
}

ResultsSummary read_results_file(const std::string& path) {
  const h5::Handle file = open_results_file(path, false);
  ResultsSummary summary;
  try {
    summary.format_name = *h5::read_attr_string(file.get(), "format_name");
    summary.format_version = *h5::read_attr_int(file.get(), "format_version");
    summary.shard = h5::read_attr_string(file.get(), "shard").value_or("");
    summary.spec_path = h5::read_attr_string(file.get(), "spec_path").value_or("");
    summary.spec_text = h5::read_attr_string(file.get(), "spec_text").value_or("");
    // One per line; format 3 stores the list, older files the text.
    for (const std::string& o :
         h5::read_attr_strings(file.get(), "overrides").value_or(std::vector<std::string>{})) {
      summary.overrides += (summary.overrides.empty() ? "" : "\n") + o;
    }
    summary.filter = h5::read_attr_string(file.get(), "filter").value_or("");
    const h5::Handle configs = h5::open_group(file.get(), "configs");
    if (auto listed = configs_from_summary(file.get(), configs.get())) {
      summary.configs = std::move(*listed);
    } else {
      for (const std::string& id : h5::child_names(configs.get())) {
        summary.configs.push_back(read_config(configs.get(), id));
      }
    }
  } catch (const Error& e) {
    throw_runtime(path + " is damaged: " + e.what());
  }
  // The journal's configurations not yet folded into the file (docs/results-format.md,
  // "Appends and the journal"); an id met twice is one a killed fold left behind.
  std::set<std::string> ids;
  for (const StoredConfig& c : summary.configs) ids.insert(c.id);
  for (const std::string& entry : journal_entries(path)) {
    try {
      const h5::Handle in = h5::open_file(entry, false);
      const h5::Handle configs = h5::open_group(in.get(), "configs");
      for (const std::string& id : h5::child_names(configs.get())) {
        if (ids.insert(id).second) summary.configs.push_back(read_config(configs.get(), id));
      }
    } catch (const Error& e) {
      throw_runtime(path + " is damaged: journal entry " + entry + ": " + e.what());
    }
  }
  std::stable_sort(summary.configs.begin(), summary.configs.end(),
                   [](const StoredConfig& a, const StoredConfig& b) { return a.index < b.index; });
  return summary;
}

std::vector<StoredProfile> read_profiles(const std::string& path) {
  const h5::Handle file = open_results_file(path, false);
  std::vector<StoredProfile> out;
  if (!h5::exists(file.get(), "profiles")) return out;
  try {
    const h5::Handle profiles = h5::open_group(file.get(), "profiles");
    for (const std::string& name : h5::child_names(profiles.get())) {
      const h5::Handle g = h5::open_group(profiles.get(), name);
      StoredProfile p;
      p.name = name;
      p.key = h5::read_attr_string(g.get(), "key").value_or("");
      p.text = h5::read_attr_string(g.get(), "profile").value_or("");
      p.measured_utc = h5::read_attr_string(g.get(), "measured_utc").value_or("");
      p.measure_s = h5::read_attr_double(g.get(), "measure_s").value_or(0.0);
      if (p.key.empty() || p.text.empty())
        throw_runtime("profile " + name + " lacks its key or text");
      out.push_back(std::move(p));
    }
  } catch (const Error& e) {
    throw_runtime(path + " is damaged: " + e.what());
  }
  return out;
}

}  // namespace interplace::runs
