// The summary table: rows computed from configuration groups, kept as one extendable
// (chunked) dataset per column under /summary, so that appending a row writes a chunk or
// two whatever the table's length (docs/results-format.md, "/summary").
#include "results_summary.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/median.hpp"

namespace interplace::runs {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr hsize_t kChunkRows = 128;
constexpr const char* kGroup = "summary";

// The median of the values that are not NaN (the analysis' stats.median); NaN for none.
double nan_median(const std::vector<double>& values) {
  std::vector<double> kept;
  kept.reserve(values.size());
  for (const double v : values) {
    if (!std::isnan(v)) kept.push_back(v);
  }
  return kernels::median(std::move(kept));
}

// ---- the attributes as JSON -------------------------------------------------------------

void json_string(std::string& out, const std::string& text) {
  out += '"';
  for (const unsigned char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", ch);
      out += buffer;
    } else {
      out += static_cast<char>(ch);
    }
  }
  out += '"';
}

// A float as JSON that reads back as the same float (and as a float, not an integer);
// non-finite values as Python's json writes them (NaN, Infinity).
void json_real(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "Infinity" : "-Infinity";
  } else {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    std::string text = buffer;
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    out += text;
  }
}

// Every attribute of `object` as members of a JSON object (without the braces), in name
// order; the attribute shapes of the format: scalar strings, integers and floats, and
// one-dimensional string and integer arrays.
void json_attributes(std::string& out, hid_t object) {
  bool first = true;
  for (const std::string& name : h5::attribute_names(object)) {
    const h5::Handle attr =
        h5::check(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, "opening " + name);
    const h5::Handle space = h5::check(H5Aget_space(attr.get()), H5Sclose, "H5Aget_space");
    const h5::Handle type = h5::check(H5Aget_type(attr.get()), H5Tclose, "H5Aget_type");
    const bool scalar = H5Sget_simple_extent_type(space.get()) == H5S_SCALAR;
    std::string value;
    switch (H5Tget_class(type.get())) {
      case H5T_STRING:
        if (scalar) {
          json_string(value, h5::read_attr_string(object, name).value_or(""));
        } else if (const auto texts = h5::read_attr_strings(object, name)) {
          value += '[';
          for (size_t i = 0; i < texts->size(); ++i) {
            if (i > 0) value += ',';
            json_string(value, (*texts)[i]);
          }
          value += ']';
        }
        break;
      case H5T_INTEGER:
        if (scalar) {
          value = std::to_string(*h5::read_attr_int(object, name));
        } else {
          value += '[';
          const std::vector<int64_t> ints = *h5::read_attr_ints(object, name);
          for (size_t i = 0; i < ints.size(); ++i) {
            if (i > 0) value += ',';
            value += std::to_string(ints[i]);
          }
          value += ']';
        }
        break;
      case H5T_FLOAT:
        if (scalar) json_real(value, *h5::read_attr_double(object, name));
        break;
      default:
        break;
    }
    if (value.empty()) continue;  // a shape the format does not have
    if (!first) out += ',';
    first = false;
    json_string(out, name);
    out += ':';
    out += value;
  }
}

std::string attributes_json(hid_t group) {
  std::string out = "{";
  json_attributes(out, group);
  for (const char* sub : {"graph", "prediction", "placer_rl"}) {
    if (!h5::exists(group, sub)) continue;
    const h5::Handle g = h5::open_group(group, sub);
    if (out.size() > 1) out += ',';
    json_string(out, sub);
    out += ":{";
    json_attributes(out, g.get());
    out += '}';
  }
  return out + "}";
}

// ---- statistics of the steps ------------------------------------------------------------

// A [S, K] dataset as rows of doubles (K from its shape; 1 for a one-dimensional one).
struct Matrix {
  std::vector<double> values;
  size_t rows = 0, cols = 0;
  double at(size_t i, size_t j) const { return values[i * cols + j]; }
};

std::optional<Matrix> read_matrix(hid_t parent, const std::string& name) {
  if (!h5::exists(parent, name)) return std::nullopt;
  const h5::Handle set =
      h5::check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, "opening " + name);
  const h5::Handle space = h5::check(H5Dget_space(set.get()), H5Sclose, "H5Dget_space");
  hsize_t dims[2] = {0, 1};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1 || rank > 2) throw_runtime("dataset " + name + " is not [S] or [S, K]");
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  Matrix m;
  m.rows = dims[0];
  m.cols = rank == 2 ? dims[1] : 1;
  m.values = h5::read_doubles(parent, name);
  return m;
}

void summarize_steps(hid_t g, SummaryRow& row) {
  row.measured_steps = 0;
  row.step_time_s = kNaN;
  row.rank_medians.fill(kNaN);
  row.utilisation = row.idle_fraction = kNaN;
  row.final_step = -1;
  row.final_loss = row.final_accuracy = kNaN;
  if (!h5::exists(g, "steps")) return;
  const h5::Handle steps = h5::open_group(g, "steps");
  if (!h5::exists(steps.get(), "step_time_s")) return;
  const std::vector<double> st = h5::read_doubles(steps.get(), "step_time_s");
  std::vector<size_t> measured;  // indices of the measured steps
  if (h5::exists(steps.get(), "warmup")) {
    const std::vector<int64_t> warmup = h5::read_ints(steps.get(), "warmup");
    for (size_t i = 0; i < st.size() && i < warmup.size(); ++i) {
      if (warmup[i] == 0) measured.push_back(i);
    }
  } else {
    for (size_t i = 0; i < st.size(); ++i) measured.push_back(i);
  }
  row.measured_steps = static_cast<int64_t>(measured.size());
  if (measured.empty()) return;
  std::vector<double> times;
  for (const size_t i : measured) times.push_back(st[i]);
  row.step_time_s = nan_median(times);

  std::array<std::optional<Matrix>, kSummaryRankColumns.size()> ranks;
  if (h5::exists(g, "ranks")) {
    const h5::Handle r = h5::open_group(g, "ranks");
    for (size_t c = 0; c < ranks.size(); ++c)
      ranks[c] = read_matrix(r.get(), kSummaryRankColumns[c]);
  }
  for (size_t c = 0; c < ranks.size(); ++c) {
    if (!ranks[c]) continue;
    const Matrix& m = *ranks[c];
    const std::string name = kSummaryRankColumns[c];
    std::vector<double> per_step;
    double peak = -std::numeric_limits<double>::infinity();
    bool any = false;
    for (const size_t i : measured) {
      if (i >= m.rows) break;
      double sum = 0.0, nan_sum = 0.0;
      size_t count = 0;
      for (size_t j = 0; j < m.cols; ++j) {
        const double v = m.at(i, j);
        sum += v;
        if (!std::isnan(v)) {
          nan_sum += v;
          ++count;
          peak = std::max(peak, v);
          any = true;
        }
      }
      if (name == "bytes_sent") {
        per_step.push_back(sum);
      } else {
        per_step.push_back(count > 0 ? nan_sum / static_cast<double>(count) : kNaN);
      }
    }
    row.rank_medians[c] = name == "peak_memory_bytes" ? (any ? peak : kNaN) : nan_median(per_step);
  }
  // Utilisation and the bubble: compute (forward, backward, aux, optimizer) and idle
  // summed over the ranks over ranks x step time, per measured step; the ranks are the K
  // stages of each of the R data-parallel replicas.
  const int64_t k = h5::read_attr_int(g, "devices").value_or(0) *
                    h5::read_attr_int(g, "data_parallel").value_or(1);
  const auto& forward = ranks[1];
  const auto& backward = ranks[2];
  const auto& aux = ranks[3];
  const auto& optimizer = ranks[4];
  const auto& idle = ranks[6];
  if (k != 0 && forward && backward && aux && optimizer) {
    std::vector<double> utilisation, idle_share;
    for (const size_t i : measured) {
      if (i >= forward->rows) break;
      const double denominator = static_cast<double>(k) * st[i];
      double compute = 0.0, idle_sum = 0.0;
      for (size_t j = 0; j < forward->cols; ++j) {
        compute +=
            0.0 + forward->at(i, j) + backward->at(i, j) + aux->at(i, j) + optimizer->at(i, j);
        if (idle) idle_sum += idle->at(i, j);
      }
      utilisation.push_back(compute / denominator);
      idle_share.push_back(idle_sum / denominator);
    }
    row.utilisation = nan_median(utilisation);
    if (idle) row.idle_fraction = nan_median(idle_share);
  }
  const size_t last = measured.back();
  row.final_step = static_cast<int64_t>(last);
  if (h5::exists(steps.get(), "step")) {
    const std::vector<int64_t> step = h5::read_ints(steps.get(), "step");
    if (last < step.size()) row.final_step = step[last];
  }
  for (const auto& [name, value] :
       {std::pair{"loss", &row.final_loss}, std::pair{"accuracy", &row.final_accuracy}}) {
    if (!h5::exists(steps.get(), name)) continue;
    const std::vector<double> v = h5::read_doubles(steps.get(), name);
    if (last < v.size()) *value = v[last];
  }
}

// ---- the columns --------------------------------------------------------------------------

struct TextColumn {
  const char* name;
  const char* long_name;
  std::string SummaryRow::*member;
};
struct IntColumn {
  const char* name;
  const char* long_name;
  int64_t SummaryRow::*member;
};
struct RealColumn {
  const char* name;
  const char* units;
  const char* long_name;
  double SummaryRow::*member;
};

const std::vector<TextColumn>& text_columns() {
  static const std::vector<TextColumn> columns = {
      {"id", "configuration id (the group's name)", &SummaryRow::id},
      {"name", "display name", &SummaryRow::name},
      {"status", "ok, failed, skipped or diverged", &SummaryRow::status},
      {"reason", "why not ok (empty for ok)", &SummaryRow::reason},
      {"model", "model", &SummaryRow::model},
      {"family", "model family", &SummaryRow::family},
      {"order", "traversal order", &SummaryRow::order},
      {"placer", "placer", &SummaryRow::placer},
      {"strategy", "backprop strategy", &SummaryRow::strategy},
      {"pipeline", "pipeline schedule", &SummaryRow::pipeline},
      {"interlock_mode", "interlock mode", &SummaryRow::interlock_mode},
      {"attributes", "every attribute of the group (and of graph, prediction, placer_rl) as JSON",
       &SummaryRow::attributes},
  };
  return columns;
}

const std::vector<IntColumn>& int_columns() {
  static const std::vector<IntColumn> columns = {
      {"index", "position in the spec's expansion", &SummaryRow::index},
      {"devices", "K ranks", &SummaryRow::devices},
      {"micro_batches", "micro-batches", &SummaryRow::micro_batches},
      {"batch_size", "mini-batch", &SummaryRow::batch_size},
      {"seed", "seed", &SummaryRow::seed},
      {"repeat", "0-based run of the setting", &SummaryRow::repeat},
      {"measured_steps", "measured steps (warm-up excluded)", &SummaryRow::measured_steps},
      {"final_step", "step of the last measured step (-1: none)", &SummaryRow::final_step},
      {"has_timeline", "1 when a measured timeline is stored", &SummaryRow::has_timeline},
  };
  return columns;
}

const std::vector<RealColumn>& real_columns() {
  static const std::vector<RealColumn> columns = {
      {"wall_s", "s", "plan + train + evaluation wall time", &SummaryRow::wall_s},
      {"samples_per_s", "1", "samples per second (NaN unless ok)", &SummaryRow::samples_per_s},
      {"eval_accuracy", "1", "evaluation accuracy (NaN unless evaluated)",
       &SummaryRow::eval_accuracy},
      {"step_time_s", "s", "median measured step time", &SummaryRow::step_time_s},
      {"utilisation", "1", "median compute share of ranks (K x R) x step time",
       &SummaryRow::utilisation},
      {"idle_fraction", "1", "median idle share of ranks (K x R) x step time",
       &SummaryRow::idle_fraction},
      {"final_loss", "1", "training loss of the last measured step", &SummaryRow::final_loss},
      {"final_accuracy", "1", "training accuracy of the last measured step",
       &SummaryRow::final_accuracy},
      {"pred_step_time_s", "s", "predicted step time", &SummaryRow::pred_step_time_s},
      {"pred_idle_fraction", "1", "predicted idle fraction", &SummaryRow::pred_idle_fraction},
  };
  return columns;
}

std::string rank_column_long_name(const std::string& name) {
  if (name == "bytes_sent") return "median over measured steps of bytes sent, summed over ranks";
  if (name == "peak_memory_bytes") return "peak memory over measured steps and ranks";
  return "median over measured steps of " + name + ", mean over ranks";
}

h5::Handle string_type() {
  h5::Handle type = h5::check(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  h5::check(H5Tset_size(type.get(), H5T_VARIABLE), "H5Tset_size");
  h5::check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset");
  return type;
}

// An empty, extendable, chunked one-dimensional dataset.
h5::Handle create_column(hid_t group, const std::string& name, hid_t type, const char* units,
                         const std::string& long_name) {
  const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  const h5::Handle space =
      h5::check(H5Screate_simple(1, &zero, &unlimited), H5Sclose, "H5Screate_simple");
  const h5::Handle properties = h5::check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  h5::check(H5Pset_chunk(properties.get(), 1, &kChunkRows), "H5Pset_chunk");
  h5::Handle set = h5::check(H5Dcreate2(group, name.c_str(), type, space.get(), H5P_DEFAULT,
                                        properties.get(), H5P_DEFAULT),
                             H5Dclose, "creating summary/" + name);
  h5::write_attr(set.get(), "units", units);
  h5::write_attr(set.get(), "long_name", long_name);
  return set;
}

// Appends `count` values (memory type `type`) at the end of `set`.
void append_values(hid_t set, hid_t type, const void* data, hsize_t count) {
  if (count == 0) return;
  const h5::Handle old_space = h5::check(H5Dget_space(set), H5Sclose, "H5Dget_space");
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(old_space.get(), &rows, nullptr);
  const hsize_t total = rows + count;
  h5::check(H5Dset_extent(set, &total), "extending a summary column");
  const h5::Handle space = h5::check(H5Dget_space(set), H5Sclose, "H5Dget_space");
  h5::check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &rows, nullptr, &count, nullptr),
            "H5Sselect_hyperslab");
  const h5::Handle memory =
      h5::check(H5Screate_simple(1, &count, nullptr), H5Sclose, "H5Screate_simple");
  h5::check(H5Dwrite(set, type, memory.get(), space.get(), H5P_DEFAULT, data),
            "writing a summary column");
}

h5::Handle open_column(hid_t group, const std::string& name) {
  return h5::check(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, "opening summary/" + name);
}

int64_t group_count(hid_t group) {
  H5G_info_t info;
  h5::check(H5Gget_info(group, &info), "H5Gget_info");
  return static_cast<int64_t>(info.nlinks);
}

}  // namespace

SummaryRow summarize_config(hid_t configs, const std::string& id) {
  const h5::Handle g = h5::open_group(configs, id);
  SummaryRow row;
  const auto text = [&](const char* name) {
    return h5::read_attr_string(g.get(), name).value_or("");
  };
  const auto integer = [&](const char* name, int64_t absent) {
    return h5::read_attr_int(g.get(), name).value_or(absent);
  };
  const auto real = [&](const char* name) {
    return h5::read_attr_double(g.get(), name).value_or(kNaN);
  };
  row.id = h5::read_attr_string(g.get(), "id").value_or(id);
  row.name = text("name");
  row.status = text("status");
  row.reason = text("reason");
  row.model = text("model");
  row.family = text("family");
  row.order = text("order");
  row.placer = text("placer");
  row.strategy = text("strategy");
  row.pipeline = text("pipeline");
  row.interlock_mode = text("interlock_mode");
  row.index = integer("index", -1);
  row.devices = integer("devices", -1);
  row.micro_batches = integer("micro_batches", -1);
  row.batch_size = integer("batch_size", -1);
  row.seed = integer("seed", -1);
  row.repeat = integer("repeat", 0);
  row.wall_s = real("wall_s");
  row.samples_per_s = real("samples_per_s");
  row.eval_accuracy = real("eval_accuracy");
  summarize_steps(g.get(), row);
  row.has_timeline = 0;
  if (h5::exists(g.get(), "timeline")) {
    const h5::Handle timeline = h5::open_group(g.get(), "timeline");
    if (h5::exists(timeline.get(), "rank")) {
      row.has_timeline = h5::read_ints(timeline.get(), "rank").empty() ? 0 : 1;
    }
  }
  row.pred_step_time_s = row.pred_idle_fraction = kNaN;
  if (h5::exists(g.get(), "prediction")) {
    const h5::Handle p = h5::open_group(g.get(), "prediction");
    row.pred_step_time_s = h5::read_attr_double(p.get(), "step_time_s").value_or(kNaN);
    row.pred_idle_fraction = h5::read_attr_double(p.get(), "idle_fraction").value_or(kNaN);
  }
  row.attributes = attributes_json(g.get());
  return row;
}

void create_summary(hid_t file) {
  const h5::Handle group = h5::create_group(file, kGroup);
  h5::write_attr(group.get(), "long_name", "one row per configuration group of /configs");
  const h5::Handle strings = string_type();
  // The rows' dimension scale: 0 ... n-1, extended with the columns.
  const h5::Handle scale =
      create_column(group.get(), "config", H5T_STD_I64LE, "1", "row of the summary table");
  h5::make_scale(scale.get(), "config");
  const auto attach = [&](const h5::Handle& set) { h5::attach_scale(set.get(), scale.get(), 0); };
  for (const TextColumn& c : text_columns()) {
    attach(create_column(group.get(), c.name, strings.get(), "1", c.long_name));
  }
  for (const IntColumn& c : int_columns()) {
    attach(create_column(group.get(), c.name, H5T_STD_I64LE, "1", c.long_name));
  }
  for (const RealColumn& c : real_columns()) {
    attach(create_column(group.get(), c.name, H5T_IEEE_F64LE, c.units, c.long_name));
  }
  for (const RankStepField& field : kRankStepFields) {
    attach(create_column(group.get(), field.name, H5T_IEEE_F64LE, field.units,
                         rank_column_long_name(field.name)));
  }
}

int64_t summary_rows(hid_t file) {
  if (!h5::exists(file, kGroup)) return -1;
  const h5::Handle group = h5::open_group(file, kGroup);
  if (!h5::exists(group.get(), "id")) return -1;
  const h5::Handle set = open_column(group.get(), "id");
  const h5::Handle space = h5::check(H5Dget_space(set.get()), H5Sclose, "H5Dget_space");
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(space.get(), &rows, nullptr);
  return static_cast<int64_t>(rows);
}

void append_summary(hid_t file, const std::vector<SummaryRow>& rows) {
  if (!h5::exists(file, kGroup)) create_summary(file);
  if (rows.empty()) return;
  const int64_t before = summary_rows(file);
  const h5::Handle group = h5::open_group(file, kGroup);
  const hsize_t n = rows.size();
  const h5::Handle strings = string_type();
  {
    std::vector<int64_t> positions(n);
    for (size_t i = 0; i < n; ++i) positions[i] = before + static_cast<int64_t>(i);
    append_values(open_column(group.get(), "config").get(), H5T_NATIVE_INT64, positions.data(), n);
  }
  for (const TextColumn& c : text_columns()) {
    std::vector<const char*> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = (rows[i].*c.member).c_str();
    append_values(open_column(group.get(), c.name).get(), strings.get(), values.data(), n);
  }
  for (const IntColumn& c : int_columns()) {
    std::vector<int64_t> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = rows[i].*c.member;
    append_values(open_column(group.get(), c.name).get(), H5T_NATIVE_INT64, values.data(), n);
  }
  for (const RealColumn& c : real_columns()) {
    std::vector<double> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = rows[i].*c.member;
    append_values(open_column(group.get(), c.name).get(), H5T_NATIVE_DOUBLE, values.data(), n);
  }
  for (size_t c = 0; c < kSummaryRankColumns.size(); ++c) {
    std::vector<double> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = rows[i].rank_medians[c];
    append_values(open_column(group.get(), kSummaryRankColumns[c]).get(), H5T_NATIVE_DOUBLE,
                  values.data(), n);
  }
}

void ensure_summary(hid_t file) {
  const h5::Handle configs = h5::open_group(file, "configs");
  if (summary_rows(file) == group_count(configs.get())) return;
  // Absent (a file from before the table) or not matching the groups (edited by hand):
  // made anew from every group.
  if (h5::exists(file, kGroup))
    h5::check(H5Ldelete(file, kGroup, H5P_DEFAULT), "deleting /summary");
  std::vector<SummaryRow> rows;
  for (const std::string& id : h5::child_names(configs.get())) {
    rows.push_back(summarize_config(configs.get(), id));
  }
  create_summary(file);
  append_summary(file, rows);
}

}  // namespace interplace::runs
