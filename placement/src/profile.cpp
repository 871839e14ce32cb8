#include "interplace/placement/profile.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"
#include "interplace/placement/json_text.hpp"

namespace interplace::placement {
namespace {

constexpr std::string_view kFormatName = "interplace-profile";
constexpr std::string_view kFormatVersion = "1";
const std::set<std::string, std::less<>> kHeaderKeys = {"device", "batch_size", "link_latency_s",
                                                        "link_bandwidth_bytes_per_s", "node_count"};
// Keys a profile may have (written since the graph totals are recorded; older files lack them).
const std::set<std::string, std::less<>> kOptionalKeys = {
    "graph_parameter_count", "graph_forward_flops",       "runtime_forward_s",
    "runtime_backward_s",    "runtime_optimizer_s",       "runtime_overhead_s",
    "devices_per_node",      "inter_node_link_latency_s", "inter_node_link_bandwidth_bytes_per_s"};
// The inter-node link: all three keys or none (a profile measured on one node).
const std::set<std::string, std::less<>> kInterNodeKeys = {
    "devices_per_node", "inter_node_link_latency_s", "inter_node_link_bandwidth_bytes_per_s"};

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) return fields;
    start = tab + 1;
  }
}

class LineReader {
 public:
  LineReader(std::string_view source, int line) : source_(source), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_invalid("profile " + std::string(source_) + ":" + std::to_string(line_) + ": " + what);
  }

  double number(std::string_view text, const char* what) const {
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      fail(std::string(what) + " '" + std::string(text) + "' is not a number");
    }
    if (!std::isfinite(value) && !(value > 0.0)) fail(std::string(what) + " must be finite");
    return value;
  }

  double non_negative_time(std::string_view text, const char* what) const {
    const double value = number(text, what);
    if (!(value >= 0.0) || !std::isfinite(value)) {
      fail(std::string(what) + " must be finite and >= 0, got " + std::string(text));
    }
    return value;
  }

  int64_t non_negative_integer(std::string_view text, const char* what) const {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
      fail(std::string(what) + " '" + std::string(text) + "' is not a non-negative integer");
    }
    return value;
  }

 private:
  std::string_view source_;
  int line_;
};

void apply_header(Profile& profile, int64_t& node_count, std::string_view key,
                  std::string_view value, const LineReader& reader) {
  if (key == "device") {
    if (value.empty()) reader.fail("device name must not be empty");
    profile.device_name = std::string(value);
  } else if (key == "batch_size") {
    profile.batch_size = reader.non_negative_integer(value, "batch_size");
    if (profile.batch_size < 1) reader.fail("batch_size must be >= 1");
  } else if (key == "link_latency_s") {
    profile.link.latency_s = reader.non_negative_time(value, "link_latency_s");
  } else if (key == "link_bandwidth_bytes_per_s") {
    profile.link.bandwidth_bytes_per_s = reader.number(value, "link_bandwidth_bytes_per_s");
    if (!(profile.link.bandwidth_bytes_per_s > 0.0)) {
      reader.fail("link_bandwidth_bytes_per_s must be > 0, got " + std::string(value));
    }
  } else if (key == "devices_per_node") {
    const int64_t count = reader.non_negative_integer(value, "devices_per_node");
    if (count < 1 || count > (int64_t{1} << 20)) {
      reader.fail("devices_per_node must be between 1 and 2^20, got " + std::string(value));
    }
    profile.link.devices_per_node = static_cast<int>(count);
  } else if (key == "inter_node_link_latency_s") {
    profile.link.inter_node_latency_s =
        reader.non_negative_time(value, "inter_node_link_latency_s");
  } else if (key == "inter_node_link_bandwidth_bytes_per_s") {
    profile.link.inter_node_bandwidth_bytes_per_s =
        reader.number(value, "inter_node_link_bandwidth_bytes_per_s");
    if (!(profile.link.inter_node_bandwidth_bytes_per_s > 0.0)) {
      reader.fail("inter_node_link_bandwidth_bytes_per_s must be > 0, got " + std::string(value));
    }
  } else if (key == "graph_parameter_count") {
    profile.graph_parameter_count = reader.non_negative_integer(value, "graph_parameter_count");
  } else if (key == "graph_forward_flops") {
    profile.graph_forward_flops = reader.non_negative_integer(value, "graph_forward_flops");
  } else if (key == "runtime_forward_s") {
    profile.runtime_forward_s = reader.non_negative_time(value, "runtime_forward_s");
  } else if (key == "runtime_backward_s") {
    profile.runtime_backward_s = reader.non_negative_time(value, "runtime_backward_s");
  } else if (key == "runtime_optimizer_s") {
    profile.runtime_optimizer_s = reader.non_negative_time(value, "runtime_optimizer_s");
  } else if (key == "runtime_overhead_s") {
    profile.runtime_overhead_s = reader.non_negative_time(value, "runtime_overhead_s");
  } else {
    node_count = reader.non_negative_integer(value, "node_count");
  }
}

std::string format_number(double value) {
  return detail::json_number(value);
}

// host_sharing<TAB>P<TAB>factor for n = 1<TAB>...<TAB>factor for n = P
void read_host_sharing(Profile& profile, const std::vector<std::string_view>& fields,
                       const LineReader& reader) {
  if (fields.size() < 3) {
    reader.fail("a host_sharing line is host_sharing, P, then P slowdown factors");
  }
  const int64_t ranks = reader.non_negative_integer(fields[1], "host_sharing ranks");
  if (ranks < 1 || ranks > 4096) reader.fail("host_sharing ranks must be in 1..4096");
  if (static_cast<int64_t>(fields.size()) != ranks + 2) {
    reader.fail("host_sharing for " + std::to_string(ranks) + " ranks needs " +
                std::to_string(ranks) + " factors (n = 1.." + std::to_string(ranks) + "), got " +
                std::to_string(fields.size() - 2));
  }
  std::vector<double> factors;
  for (size_t i = 2; i < fields.size(); ++i) {
    const double factor = reader.number(fields[i], "host_sharing factor");
    if (!(factor > 0.0) || !std::isfinite(factor)) {
      reader.fail("host_sharing factors must be finite and > 0, got " + std::string(fields[i]));
    }
    factors.push_back(factor);
  }
  if (!profile.host_sharing.slowdown.emplace(static_cast<int>(ranks), factors).second) {
    reader.fail("host_sharing for " + std::to_string(ranks) + " ranks appears twice");
  }
}

// link_curve<TAB>bytes<TAB>seconds (and inter_node_link_curve, link_receive_cpu): one
// measured point per line, bytes strictly ascending over the lines.
void read_link_point(std::vector<LinkPoint>& curve, const std::vector<std::string_view>& fields,
                     const LineReader& reader) {
  const std::string key(fields[0]);
  if (fields.size() != 3) reader.fail("a " + key + " line is " + key + ", bytes, seconds");
  const int64_t bytes = reader.non_negative_integer(fields[1], (key + " bytes").c_str());
  if (bytes < 1) reader.fail(key + " bytes must be >= 1");
  if (!curve.empty() && bytes <= curve.back().bytes) {
    reader.fail(key + " points must have ascending bytes, got " + std::to_string(bytes) +
                " after " + std::to_string(curve.back().bytes));
  }
  curve.push_back({bytes, reader.non_negative_time(fields[2], (key + " seconds").c_str())});
}

}  // namespace

double HostSharing::factor(int ranks_on_host, int busy) const {
  const auto it = slowdown.find(ranks_on_host);
  if (it == slowdown.end() || busy < 1) return 1.0;
  return it->second[static_cast<size_t>(std::min(busy, ranks_on_host) - 1)];
}

Profile read_profile(std::istream& in, std::string_view source) {
  Profile profile;
  int64_t declared_node_count = -1;
  std::set<std::string, std::less<>> seen_keys;
  std::set<std::string, std::less<>> seen_nodes;
  bool format_seen = false;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    const LineReader reader(source, line_number);
    const std::vector<std::string_view> fields = split_tabs(line);
    if (!format_seen) {
      if (fields.size() != 3 || fields[0] != "format" || fields[1] != kFormatName) {
        reader.fail("expected the format line 'format<TAB>interplace-profile<TAB>1' first");
      }
      if (fields[2] != kFormatVersion) {
        reader.fail("unsupported format version '" + std::string(fields[2]) + "' (supported: 1)");
      }
      format_seen = true;
      continue;
    }
    if (fields[0] == "node") {
      if (fields.size() != 4 && fields.size() != 5 && fields.size() != 7) {
        reader.fail(
            "a node line has 4, 5 or 7 tab-separated fields (node, name, forward_s, backward_s "
            "[, backward_input_s [, runtime_forward_s, runtime_backward_s]]), got " +
            std::to_string(fields.size()));
      }
      if (fields[1].empty()) reader.fail("node name must not be empty");
      if (!seen_nodes.emplace(fields[1]).second) {
        reader.fail("duplicate node '" + std::string(fields[1]) + "'");
      }
      NodeTiming& node = profile.nodes.emplace_back();
      node.name = std::string(fields[1]);
      node.forward_s = reader.non_negative_time(fields[2], "forward_s");
      node.backward_s = reader.non_negative_time(fields[3], "backward_s");
      if (fields.size() >= 5) {
        node.backward_input_s = reader.non_negative_time(fields[4], "backward_input_s");
      }
      if (fields.size() == 7) {
        node.runtime_forward_s = reader.non_negative_time(fields[5], "runtime_forward_s");
        node.runtime_backward_s = reader.non_negative_time(fields[6], "runtime_backward_s");
      }
      continue;
    }
    if (fields[0] == "host_sharing") {
      read_host_sharing(profile, fields, reader);
      continue;
    }
    if (fields[0] == "aux_head") {
      if (fields.size() != 4 || fields[1].empty()) {
        reader.fail("an aux_head line is aux_head, key, forward_s, backward_s");
      }
      const std::pair<double, double> times{reader.non_negative_time(fields[2], "forward_s"),
                                            reader.non_negative_time(fields[3], "backward_s")};
      if (!profile.aux_heads.emplace(std::string(fields[1]), times).second) {
        reader.fail("aux_head '" + std::string(fields[1]) + "' appears twice");
      }
      continue;
    }
    if (fields[0] == "runtime_in_flight") {
      if (fields.size() != 4) {
        reader.fail("a runtime_in_flight line is runtime_in_flight, M, forward_s, backward_s");
      }
      const int64_t m = reader.non_negative_integer(fields[1], "runtime_in_flight M");
      if (m < 2 || m > 4096) reader.fail("runtime_in_flight M must be in 2..4096");
      const std::pair<double, double> times{reader.non_negative_time(fields[2], "forward_s"),
                                            reader.non_negative_time(fields[3], "backward_s")};
      if (!profile.runtime_in_flight.emplace(static_cast<int>(m), times).second) {
        reader.fail("runtime_in_flight for M = " + std::to_string(m) + " appears twice");
      }
      continue;
    }
    if (fields[0] == "link_curve") {
      read_link_point(profile.link.curve, fields, reader);
      continue;
    }
    if (fields[0] == "inter_node_link_curve") {
      read_link_point(profile.link.inter_node_curve, fields, reader);
      continue;
    }
    if (fields[0] == "link_receive_cpu") {
      read_link_point(profile.link.receive_cpu, fields, reader);
      continue;
    }
    if (kHeaderKeys.count(fields[0]) == 0 && kOptionalKeys.count(fields[0]) == 0) {
      reader.fail("unknown key '" + std::string(fields[0]) + "'");
    }
    if (fields.size() != 2) reader.fail("key '" + std::string(fields[0]) + "' takes one value");
    if (!seen_keys.emplace(fields[0]).second) {
      reader.fail("key '" + std::string(fields[0]) + "' appears twice");
    }
    apply_header(profile, declared_node_count, fields[0], fields[1], reader);
  }
  if (in.bad()) throw_runtime("profile " + std::string(source) + ": read error");
  const std::string where = "profile " + std::string(source) + ": ";
  if (!format_seen) throw_invalid(where + "empty file (no format line)");
  for (const std::string& key : kHeaderKeys) {
    if (seen_keys.count(key) == 0) throw_invalid(where + "missing key '" + key + "'");
  }
  size_t inter_node_keys = 0;
  for (const std::string& key : kInterNodeKeys) inter_node_keys += seen_keys.count(key);
  if (inter_node_keys != 0 && inter_node_keys != kInterNodeKeys.size()) {
    throw_invalid(where +
                  "the inter-node link needs all of devices_per_node, inter_node_link_latency_s "
                  "and inter_node_link_bandwidth_bytes_per_s, or none of them");
  }
  if (!profile.link.inter_node_curve.empty() && inter_node_keys == 0) {
    throw_invalid(where + "inter_node_link_curve without the inter-node link's keys");
  }
  if (declared_node_count != static_cast<int64_t>(profile.nodes.size())) {
    throw_invalid(where + "node_count says " + std::to_string(declared_node_count) + " but " +
                  std::to_string(profile.nodes.size()) + " node lines follow (truncated file?)");
  }
  return profile;
}

Profile read_profile_file(const std::filesystem::path& path) {
  check_input_file(path, "profile", kMaxTextInputBytes);  // not /dev/zero, not a directory
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid("cannot open profile '" + path.string() + "'");
  return read_profile(in, path.string());
}

void write_profile(std::ostream& out, const Profile& profile) {
  auto check_text = [](const std::string& text, const char* what) {
    if (text.empty()) throw_invalid(std::string("profile: ") + what + " must not be empty");
    for (char c : text) {
      if (c == '\t' || c == '\n' || c == '\r') {
        throw_invalid(std::string("profile: ") + what + " '" + text +
                      "' contains a tab or line break");
      }
    }
  };
  auto check_time = [](double value, const std::string& what) {
    if (!(value >= 0.0) || !std::isfinite(value)) {
      throw_invalid("profile: " + what + " must be finite and >= 0");
    }
  };
  check_text(profile.device_name, "device name");
  if (profile.batch_size < 1) throw_invalid("profile: batch_size must be >= 1");
  check_time(profile.link.latency_s, "link_latency_s");
  if (!(profile.link.bandwidth_bytes_per_s > 0.0)) {
    throw_invalid("profile: link_bandwidth_bytes_per_s must be > 0");
  }
  if (profile.link.devices_per_node < 0) throw_invalid("profile: devices_per_node must be >= 0");
  if (profile.link.multi_node()) {
    check_time(profile.link.inter_node_latency_s, "inter_node_link_latency_s");
    if (!(profile.link.inter_node_bandwidth_bytes_per_s > 0.0)) {
      throw_invalid("profile: inter_node_link_bandwidth_bytes_per_s must be > 0");
    }
  }
  std::ostringstream text;
  text << "# interplace per-node times; see docs/profile-format.md\n"
       << "format\t" << kFormatName << '\t' << kFormatVersion << '\n'
       << "device\t" << profile.device_name << '\n'
       << "batch_size\t" << profile.batch_size << '\n'
       << "link_latency_s\t" << format_number(profile.link.latency_s) << '\n'
       << "link_bandwidth_bytes_per_s\t"
       << (std::isinf(profile.link.bandwidth_bytes_per_s)
               ? std::string("inf")
               : format_number(profile.link.bandwidth_bytes_per_s))
       << '\n'
       << "node_count\t" << profile.nodes.size() << '\n';
  if (profile.link.multi_node()) {
    text << "devices_per_node\t" << profile.link.devices_per_node << '\n'
         << "inter_node_link_latency_s\t" << format_number(profile.link.inter_node_latency_s)
         << '\n'
         << "inter_node_link_bandwidth_bytes_per_s\t"
         << (std::isinf(profile.link.inter_node_bandwidth_bytes_per_s)
                 ? std::string("inf")
                 : format_number(profile.link.inter_node_bandwidth_bytes_per_s))
         << '\n';
  }
  const auto write_curve = [&](const char* key, const std::vector<LinkPoint>& curve) {
    for (size_t i = 0; i < curve.size(); ++i) {
      if (curve[i].bytes < 1 || (i > 0 && curve[i].bytes <= curve[i - 1].bytes)) {
        throw_invalid(std::string("profile: ") + key + " points need ascending bytes >= 1");
      }
      check_time(curve[i].seconds, key);
      text << key << '\t' << curve[i].bytes << '\t' << format_number(curve[i].seconds) << '\n';
    }
  };
  write_curve("link_curve", profile.link.curve);
  if (profile.link.multi_node())
    write_curve("inter_node_link_curve", profile.link.inter_node_curve);
  write_curve("link_receive_cpu", profile.link.receive_cpu);
  if (profile.graph_parameter_count > 0) {
    text << "graph_parameter_count\t" << profile.graph_parameter_count << '\n';
  }
  if (profile.graph_forward_flops > 0) {
    text << "graph_forward_flops\t" << profile.graph_forward_flops << '\n';
  }
  for (const auto& [key, value] : {std::pair{"runtime_forward_s", profile.runtime_forward_s},
                                   std::pair{"runtime_backward_s", profile.runtime_backward_s},
                                   std::pair{"runtime_optimizer_s", profile.runtime_optimizer_s},
                                   std::pair{"runtime_overhead_s", profile.runtime_overhead_s}}) {
    if (std::isnan(value)) continue;
    check_time(value, key);
    text << key << '\t' << format_number(value) << '\n';
  }
  for (const auto& [m, times] : profile.runtime_in_flight) {
    if (m < 2) throw_invalid("profile: runtime_in_flight needs M >= 2");
    check_time(times.first, "runtime_in_flight forward_s");
    check_time(times.second, "runtime_in_flight backward_s");
    text << "runtime_in_flight\t" << m << '\t' << format_number(times.first) << '\t'
         << format_number(times.second) << '\n';
  }
  for (const auto& [ranks, factors] : profile.host_sharing.slowdown) {
    if (ranks < 1 || factors.size() != static_cast<size_t>(ranks)) {
      throw_invalid("profile: host_sharing for " + std::to_string(ranks) + " ranks needs " +
                    std::to_string(ranks) + " factors");
    }
    text << "host_sharing\t" << ranks;
    for (double factor : factors) {
      if (!(factor > 0.0) || !std::isfinite(factor)) {
        throw_invalid("profile: host_sharing factors must be finite and > 0");
      }
      text << '\t' << format_number(factor);
    }
    text << '\n';
  }
  for (const auto& [key, times] : profile.aux_heads) {
    check_text(key, "aux_head key");
    check_time(times.first, "aux_head forward_s");
    check_time(times.second, "aux_head backward_s");
    text << "aux_head\t" << key << '\t' << format_number(times.first) << '\t'
         << format_number(times.second) << '\n';
  }
  std::set<std::string_view> names;
  for (const NodeTiming& node : profile.nodes) {
    check_text(node.name, "node name");
    if (!names.insert(node.name).second)
      throw_invalid("profile: duplicate node '" + node.name + "'");
    check_time(node.forward_s, "forward_s of '" + node.name + "'");
    check_time(node.backward_s, "backward_s of '" + node.name + "'");
    text << "node\t" << node.name << '\t' << format_number(node.forward_s) << '\t'
         << format_number(node.backward_s);
    if (!std::isnan(node.backward_input_s)) {
      check_time(node.backward_input_s, "backward_input_s of '" + node.name + "'");
      text << '\t' << format_number(node.backward_input_s);
    }
    const bool in_runtime =
        !std::isnan(node.runtime_forward_s) && !std::isnan(node.runtime_backward_s);
    if (in_runtime) {
      if (std::isnan(node.backward_input_s)) {
        throw_invalid("profile: runtime node times of '" + node.name +
                      "' need its backward_input_s");
      }
      check_time(node.runtime_forward_s, "runtime_forward_s of '" + node.name + "'");
      check_time(node.runtime_backward_s, "runtime_backward_s of '" + node.name + "'");
      text << '\t' << format_number(node.runtime_forward_s) << '\t'
           << format_number(node.runtime_backward_s);
    }
    text << '\n';
  }
  out << text.str();
}

void write_profile_file(const std::filesystem::path& path, const Profile& profile) {
  std::ostringstream text;
  write_profile(text, profile);  // validate before touching the file
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw_runtime("cannot write profile '" + path.string() + "'");
  out << text.str();
  out.flush();
  if (!out) throw_runtime("error writing profile '" + path.string() + "'");
}

}  // namespace interplace::placement
