#include "device_options.hpp"

#include <cmath>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/profile.hpp"
#include "json_writer.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
namespace {

std::string preset_name(const DeviceSelection& selection) {
  return selection.preset.empty() ? placement::device_presets().front().name : selection.preset;
}

bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

double positive(const char* flag, double value, bool allow_infinity = false) {
  if (std::isnan(value) || value <= 0.0 || (!allow_infinity && std::isinf(value))) {
    throw_invalid(std::string(flag) + " must be a " + (allow_infinity ? "" : "finite ") +
                  "number > 0, got " + format_number(value));
  }
  return value;
}

}  // namespace

void add_device_options(CLI::App& app, DeviceSelection& s) {
  std::string presets;
  for (const std::string& name : placement::device_preset_names()) {
    presets += (presets.empty() ? "" : ", ") + name;
  }
  const char* group = "Device";
  app.add_option("--device-preset", s.preset,
                 "device description: " + presets + " (default " +
                     placement::device_presets().front().name + "; numbers in docs/cli.md)")
      ->group(group);
  s.flops_option =
      app.add_option("--device-flops", s.flops, "peak FLOP/s of one device")->group(group);
  s.bandwidth_option =
      app.add_option("--device-bandwidth", s.bandwidth, "memory bandwidth of one device, bytes/s")
          ->group(group);
  s.memory_option =
      app.add_option("--memory-gb", s.memory_gb, "memory of one device, GB (1e9 bytes)")
          ->group(group);
  s.latency_option =
      app.add_option("--link-latency-us", s.link_latency_us, "link latency, microseconds")
          ->group(group);
  s.link_bandwidth_option =
      app.add_option("--link-bandwidth-gbs", s.link_bandwidth_gbs,
                     "link bandwidth, GB/s per direction (inf: free transfers)")
          ->group(group);
  app.add_option("--profile", s.profile,
                 "measured per-node times and link (docs/profile-format.md) instead of the "
                 "roofline; --link-* flags still override its link")
      ->group(group);
  app.add_option("--ranks-per-host", s.ranks_per_host,
                 "devices (ranks) per host, consecutive devices filling a host; a profile's "
                 "host_sharing slows down ranks computing at once on one host (0: all on one)")
      ->capture_default_str()
      ->group(group);
  add_optimizer_option(app, s.optimizer, "optimiser whose state the memory estimate counts")
      ->group(group);
}

CLI::Option* add_optimizer_option(CLI::App& app, placement::OptimizerKind& optimizer,
                                  const std::string& description) {
  optimizer = kDefaultOptimizer;
  // A validator rather than a throw from the callback: CLI11 then reports an unknown name
  // as a parse error naming the flag, which main() prints once under mpirun.
  const CLI::Validator known(
      [](std::string& text) {
        try {
          placement::optimizer_by_name(text);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      "");
  return app
      .add_option_function<std::string>(
          "--optimizer",
          [&optimizer](const std::string& text) { optimizer = placement::optimizer_by_name(text); },
          description + ": " + join(placement::optimizer_names()) +
              " (sgd: plain, sgd-momentum: momentum 0.9)")
      ->check(known)
      ->default_str(placement::to_string(kDefaultOptimizer));
}

placement::CostModel make_cost_model(const DeviceSelection& s) {
  const placement::DevicePreset& preset = placement::device_preset_by_name(preset_name(s));
  placement::DeviceSpec device = preset.device;
  placement::LinkSpec link = preset.link;
  if (given(s.flops_option)) device.peak_flops_per_s = positive("--device-flops", s.flops);
  if (given(s.bandwidth_option)) {
    device.memory_bandwidth_bytes_per_s = positive("--device-bandwidth", s.bandwidth);
  }
  if (given(s.memory_option)) {
    const double bytes = positive("--memory-gb", s.memory_gb) * 1e9;
    if (bytes < 1.0 || bytes > 9e18) {
      throw_invalid("--memory-gb must be between 1e-9 and 9e9, got " + format_number(s.memory_gb));
    }
    device.memory_capacity_bytes = std::llround(bytes);
  }
  if (given(s.latency_option)) {
    if (!std::isfinite(s.link_latency_us) || s.link_latency_us < 0.0) {
      throw_invalid("--link-latency-us must be a finite number >= 0, got " +
                    format_number(s.link_latency_us));
    }
    link.latency_s = s.link_latency_us * 1e-6;
  }
  if (given(s.link_bandwidth_option)) {
    link.bandwidth_bytes_per_s = positive("--link-bandwidth-gbs", s.link_bandwidth_gbs, true) * 1e9;
  }
  const placement::OptimizerKind optimizer = s.optimizer;
  if (s.ranks_per_host < 0) {
    throw_invalid("--ranks-per-host must be >= 0 (0: every device on one host), got " +
                  std::to_string(s.ranks_per_host));
  }
  if (s.profile.empty()) return placement::CostModel(device, link, optimizer);
  placement::Profile profile = placement::read_profile_file(s.profile);
  if (given(s.latency_option)) profile.link.latency_s = link.latency_s;
  if (given(s.link_bandwidth_option))
    profile.link.bandwidth_bytes_per_s = link.bandwidth_bytes_per_s;
  // A flag replaces the measured link, its curve included.
  if (given(s.latency_option) || given(s.link_bandwidth_option)) profile.link.curve.clear();
  device.name.clear();  // the profile names the device it was measured on
  placement::CostModel model =
      placement::CostModel::from_profile(std::move(profile), device, optimizer);
  model.set_ranks_per_host(s.ranks_per_host);
  return model;
}

std::string link_json(const placement::LinkSpec& link) {
  JsonObject out;
  out.number("latency_s", link.latency_s)
      .number("bandwidth_bytes_per_s", link.bandwidth_bytes_per_s)
      .integer("devices_per_node", link.devices_per_node);  // 0: one node
  if (link.multi_node()) {
    out.number("inter_node_latency_s", link.inter_node_latency_s)
        .number("inter_node_bandwidth_bytes_per_s", link.inter_node_bandwidth_bytes_per_s);
  }
  return out.str();
}

std::string device_json(const DeviceSelection& s, const placement::CostModel& model) {
  const placement::DeviceSpec& d = model.device();
  JsonObject out;
  out.string("preset", preset_name(s))
      .string("name", d.name)
      .number("peak_flops_per_s", d.peak_flops_per_s)
      .number("memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s)
      .integer("memory_capacity_bytes", d.memory_capacity_bytes);
  if (s.profile.empty()) {
    out.null("profile");
  } else {
    out.string("profile", s.profile);
  }
  return out.str();
}

std::string device_text(const DeviceSelection& s, const placement::CostModel& model) {
  const placement::DeviceSpec& d = model.device();
  std::string out = "device " + d.name + ": ";
  if (model.profile()) {
    out += "node times from profile " + s.profile + ", ";
  } else {
    out += format_scaled(d.peak_flops_per_s, "FLOP/s") + ", " +
           format_scaled(d.memory_bandwidth_bytes_per_s, "B/s") + ", ";
  }
  out += format_bytes(static_cast<double>(d.memory_capacity_bytes)) + "; link " +
         format_seconds(model.link().latency_s) + ", " +
         format_scaled(model.link().bandwidth_bytes_per_s, "B/s") +
         (model.link().multi_node()
              ? " within nodes of " + std::to_string(model.link().devices_per_node) + " devices, " +
                    format_seconds(model.link().inter_node_latency_s) + ", " +
                    format_scaled(model.link().inter_node_bandwidth_bytes_per_s, "B/s") +
                    " between them"
              : "") +
         "; optimizer " + placement::to_string(model.optimizer());
  return out;
}

}  // namespace interplace::runs::cli
