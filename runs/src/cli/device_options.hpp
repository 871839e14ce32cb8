// The device and link description behind the cost model: a preset (device_presets.hpp),
// single numbers overriding it, or a measured profile, plus the optimiser whose state the
// memory estimate counts.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "interplace/placement/cost_model.hpp"
#include "interplace/runs/run_defaults.hpp"

namespace interplace::runs::cli {

struct DeviceSelection {
  std::string preset;      // empty: the first preset
  double flops = 0.0;      // FLOP/s
  double bandwidth = 0.0;  // bytes/s
  double memory_gb = 0.0;
  double link_latency_us = 0.0;
  double link_bandwidth_gbs = 0.0;
  std::string profile;
  int ranks_per_host = 0;  // 0: every device on one host
  placement::OptimizerKind optimizer = kDefaultOptimizer;
  // Which of the numbers were given (the others come from the preset or the profile).
  CLI::Option* flops_option = nullptr;
  CLI::Option* bandwidth_option = nullptr;
  CLI::Option* memory_option = nullptr;
  CLI::Option* latency_option = nullptr;
  CLI::Option* link_bandwidth_option = nullptr;
};

void add_device_options(CLI::App& app, DeviceSelection& selection);
// --optimizer, parsed to its enum while the command line is read (an unknown name is a
// command-line error listing the valid ones); `place`, `simulate` and `train` share it so
// that a name means one optimiser everywhere.
CLI::Option* add_optimizer_option(CLI::App& app, placement::OptimizerKind& optimizer,
                                  const std::string& description);

// Throws invalid_input for an unknown preset or optimiser, numbers that are not finite and
// positive (a link latency may be 0, a link bandwidth infinite), or a bad profile file.
placement::CostModel make_cost_model(const DeviceSelection& selection);

// {"preset", "name", "peak_flops_per_s", "memory_bandwidth_bytes_per_s",
//  "memory_capacity_bytes", "profile"} and {"latency_s", "bandwidth_bytes_per_s"}.
std::string device_json(const DeviceSelection& selection, const placement::CostModel& model);
std::string link_json(const placement::LinkSpec& link);
// "device h100: 67.0 TFLOP/s, 3.35 TB/s, 80.0 GB; link 2.00 us, 450 GB/s; optimizer ..."
std::string device_text(const DeviceSelection& selection, const placement::CostModel& model);

}  // namespace interplace::runs::cli
