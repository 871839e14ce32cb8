// Reading result files back: the format check first (so that a wrong file gets one clear
// line, not an HDF5 error stack), then one summary row per configuration group.
#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "hdf5_io.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/results_format.hpp"
#include "results_open.hpp"

namespace interplace::runs {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using kernels::median;

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

// An attribute every configuration group has: missing or of another type, the file is
// damaged, and every count made from it would be wrong.
template <typename Value>
Value required(const std::optional<Value>& value, const std::string& id, const char* attribute,
               const char* type) {
  if (!value) {
    throw_invalid("group /configs/" + id + ": attribute '" + attribute + "' is missing or not " +
                  type);
  }
  return *value;
}

StoredConfig read_config(hid_t configs, const std::string& id) {
  const h5::Handle g = h5::open_group(configs, id);
  StoredConfig c;
  c.id = required(h5::read_attr_string(g.get(), "id"), id, "id", "a string");
  c.index = required(h5::read_attr_int(g.get(), "index"), id, "index", "an integer");
  c.name = h5::read_attr_string(g.get(), "name").value_or("");
  c.status = required(h5::read_attr_string(g.get(), "status"), id, "status", "a string");
  if (std::find(kStatuses.begin(), kStatuses.end(), c.status) == kStatuses.end()) {
    throw_invalid("group /configs/" + id + ": attribute 'status' is " + escaped(c.status) +
                  " (valid: ok, failed, skipped, diverged)");
  }
  c.reason = h5::read_attr_string(g.get(), "reason").value_or("");
  c.samples_per_s = h5::read_attr_double(g.get(), "samples_per_s").value_or(kNaN);
  c.eval_accuracy = h5::read_attr_double(g.get(), "eval_accuracy").value_or(kNaN);
  c.median_step_s = kNaN;
  c.final_loss = kNaN;
  if (h5::exists(g.get(), "steps")) {
    const h5::Handle steps = h5::open_group(g.get(), "steps");
    const std::vector<double> times = h5::read_doubles(steps.get(), "step_time_s");
    const std::vector<int64_t> warmup = h5::read_ints(steps.get(), "warmup");
    std::vector<double> measured;
    for (size_t i = 0; i < times.size() && i < warmup.size(); ++i) {
      if (warmup[i] == 0) measured.push_back(times[i]);
    }
    c.median_step_s = median(measured);
    const std::vector<double> loss = h5::read_doubles(steps.get(), "loss");
    if (!loss.empty()) c.final_loss = loss.back();
  }
  return c;
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
    for (const std::string& id : h5::child_names(configs.get())) {
      summary.configs.push_back(read_config(configs.get(), id));
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
