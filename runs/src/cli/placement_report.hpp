// What `place` prints about a placement (and `simulate` repeats before its step): per
// device node counts, compute, memory and load; stage-chain and local-strategy
// eligibility with the reason when not; the list-scheduled step estimate; the placer's
// wall time.
#pragma once

#include <string>

#include "device_options.hpp"
#include "interplace/placement/cost_model.hpp"
#include "interplace/placement/graph.hpp"
#include "json_writer.hpp"
#include "model_options.hpp"
#include "placement_options.hpp"

namespace interplace::runs::cli {

struct PlacementContext {
  const ModelSelection& model;
  const DeviceSelection& device;
  const PlacementSelection& selection;
  const placement::Graph& graph;
  const placement::CostModel& cost_model;
  const PlacementRun& run;
};

// Header lines (model, order, placer, device); with `device_table` also the per-device
// table; then chain, eligibility, step estimate and wall time.
std::string placement_text(const PlacementContext& context, bool device_table);
// The top-level fields of place's JSON object; simulate adds its own before closing it.
JsonObject placement_json(const PlacementContext& context);

}  // namespace interplace::runs::cli
