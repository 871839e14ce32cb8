// Which placements the local and interlocking strategies can run on.
//
// A placement is a stage chain when every edge goes from device i to a device j >= i and
// all K devices hold at least one node (so devices are stages 0..K-1 in order). Local and
// interlocking strategies further need single-tensor boundaries: every edge that crosses
// devices goes from stage i to stage i+1, and for each i exactly one producer on stage i
// sends to stage i+1 (its one tensor is what the auxiliary head and the next stage read).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/placement.hpp"

namespace interplace::placement {

// Why the placement is not a stage chain; nullopt when it is.
std::optional<std::string> stage_chain_violation(const Graph& graph, const Placement& placement);
bool is_stage_chain(const Graph& graph, const Placement& placement);

// Virtual stages (pipelines.hpp): the placement of the K*V model stages, `stages` (a
// stage chain, stage s the placement's device s), on `devices` devices, each stage on the
// device `map` gives it (loop: s mod K). Throws invalid_input unless stages.device_count is
// a multiple of devices the map takes.
Placement interleaved_devices(const Placement& stages, StageMap map, int devices);
// Why a stage chain cannot run interleaved 1F1B's messages: a tensor consumed past the
// next stage (a device's chunks pass tensors only to their neighbour stages'); nullopt
// when it can.
std::optional<std::string> interleaved_violation(const Graph& graph, const Placement& stages);
// Throws interleaved_violation's reason as invalid_input, naming `pipeline` (a pipeline of
// virtual stages) and with a HINT.
void require_chunk_chain(PipelineKind pipeline, const Graph& graph, const Placement& stages);

// Why local and interlocking strategies cannot run on this placement (not a chain, an
// edge that skips a stage, a boundary crossed by zero or several tensors); nullopt when
// they can. This is the reason a run record gives for running only the global strategy.
std::optional<std::string> local_strategy_ineligibility(const Graph& graph,
                                                        const Placement& placement);

// For an eligible placement, the producer whose tensor crosses boundary i -> i+1, for
// i = 0..K-2. Throws invalid_input with the reason otherwise.
std::vector<NodeId> boundary_producers(const Graph& graph, const Placement& placement);

}  // namespace interplace::placement
