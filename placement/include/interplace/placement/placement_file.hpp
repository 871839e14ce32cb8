// Placement files (docs/placers.md#placement-files): a placement saved by `interplace place
// --save-placement` and trained as it is by `interplace train --placement`, so that a
// placement found once (by the rl placer, say) runs without being searched again.
#pragma once

#include <string>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/placement.hpp"

namespace interplace::placement {

// Text: "interplace-placement 1", "devices K", "nodes N", then one "name<TAB>device" line
// per node in node-id order. Throws invalid_input when the file cannot be written.
void write_placement_file(const std::string& path, const Graph& graph, const Placement& placement);

// Throws invalid_input naming the file and line when the file cannot be read, is not a
// placement file, or does not fit `graph` (another node count or node name at a line, a
// device outside 0..K-1).
Placement read_placement_file(const std::string& path, const Graph& graph);

}  // namespace interplace::placement
