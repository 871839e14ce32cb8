// Named device descriptions for the roofline cost model, so that a placement or a
// simulation can be asked for without measuring anything first. The numbers and their
// sources are listed in docs/cli.md; a measured profile (`--profile`) replaces them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/cost_model.hpp"

namespace interplace::placement {

struct DevicePreset {
  std::string name;  // as on the command line: "cpu-core", "h100", "h200"
  DeviceSpec device;
  LinkSpec link;       // between two devices of this kind
  std::string source;  // where the numbers come from, one line
};

// In the order they are documented; the first one is the default.
const std::vector<DevicePreset>& device_presets();
std::vector<std::string> device_preset_names();
// Throws invalid_input for an unknown name, listing the valid ones.
const DevicePreset& device_preset_by_name(std::string_view name);

}  // namespace interplace::placement
