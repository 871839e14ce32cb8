#include "interplace/placement/device_presets.hpp"

#include "interplace/kernels/error.hpp"

namespace interplace::placement {

namespace {

// Built one at a time: a braced list of nested aggregates with strings trips GCC 12's
// -Wmaybe-uninitialized.
DevicePreset preset(std::string name, double peak_flops_per_s, double bandwidth_bytes_per_s,
                    int64_t memory_bytes, double link_latency_s, double link_bytes_per_s,
                    std::string source) {
  DevicePreset p;
  p.name = name;
  p.device.name = std::move(name);
  p.device.peak_flops_per_s = peak_flops_per_s;
  p.device.memory_bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  p.device.memory_capacity_bytes = memory_bytes;
  p.link.latency_s = link_latency_s;
  p.link.bandwidth_bytes_per_s = link_bytes_per_s;
  p.source = std::move(source);
  return p;
}

// The GPU presets' nodes: 8 GPUs joined by NVLink (an HGX board), nodes joined by one
// 200 Gb/s InfiniBand link per GPU (25 GB/s), about 5 us: a K <= 8 placement stays on one
// node, larger ones cross the network at every 8th device.
DevicePreset with_nodes(DevicePreset p, int devices_per_node, double latency_s, double bytes_per_s,
                        const std::string& source) {
  p.link.devices_per_node = devices_per_node;
  p.link.inter_node_latency_s = latency_s;
  p.link.inter_node_bandwidth_bytes_per_s = bytes_per_s;
  p.source += source;
  return p;
}
const char* const kInfiniBand =
    "; nodes of 8 GPUs, between nodes 200 Gb/s InfiniBand (25 GB/s), assumed 5 us";

}  // namespace

const std::vector<DevicePreset>& device_presets() {
  // Decimal units throughout: 1 GB = 1e9 bytes, 1 TB/s = 1e12 bytes/s.
  static const std::vector<DevicePreset> presets = [] {
    std::vector<DevicePreset> all;
    all.push_back(preset("cpu-core", 128e9, 15e9, 8'000'000'000, 1e-6, 10e9,
                         "128 GFLOP/s: oneDNN 3x3 conv, one AVX-512 core (docs/kernels.md); "
                         "15 GB/s: one-core triad on the development machine (AMD EPYC); 8 GB: "
                         "a per-core share of a node; link: assumed shared-memory MPI, 1 us and "
                         "10 GB/s"));
    all.push_back(with_nodes(preset("h100", 67e12, 3.35e12, 80'000'000'000, 2e-6, 450e9,
                                    "NVIDIA H100 SXM5 datasheet: 67 TFLOP/s FP32 (no tensor "
                                    "cores), 3.35 TB/s HBM3, 80 GB; link: NVLink 4, 900 GB/s "
                                    "both directions (450 GB/s each), assumed 2 us"),
                             8, 5e-6, 25e9, kInfiniBand));
    all.push_back(with_nodes(preset("h200", 67e12, 4.8e12, 141'000'000'000, 2e-6, 450e9,
                                    "NVIDIA H200 SXM datasheet: 67 TFLOP/s FP32 (no tensor "
                                    "cores), 4.8 TB/s HBM3e, 141 GB; link: NVLink 4, 900 GB/s "
                                    "both directions (450 GB/s each), assumed 2 us"),
                             8, 5e-6, 25e9, kInfiniBand));
    return all;
  }();
  return presets;
}

std::vector<std::string> device_preset_names() {
  std::vector<std::string> names;
  for (const DevicePreset& preset : device_presets()) names.push_back(preset.name);
  return names;
}

const DevicePreset& device_preset_by_name(std::string_view name) {
  std::string valid;
  for (const DevicePreset& preset : device_presets()) {
    if (preset.name == name) return preset;
    valid += (valid.empty() ? "" : ", ") + preset.name;
  }
  throw_invalid("unknown device preset '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace interplace::placement
