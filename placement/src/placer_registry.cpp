#include <array>
#include <string>
#include <utility>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/placers.hpp"

namespace interplace::placement {
namespace {

using PlacerFunction = Placement (*)(const Graph&, const Order&, const PlacementRequest&);

struct PlacerEntry {
  PlacerKind kind;
  const char* name;
  PlacerFunction function;
};

// In PlacerKind's order.
constexpr std::array<PlacerEntry, 11> kPlacers = {{
    {PlacerKind::contiguous, "contiguous", &place_contiguous},
    {PlacerKind::stages, "stages", &place_stages},
    {PlacerKind::greedy_eft, "greedy-eft", &place_greedy_eft},
    {PlacerKind::balanced, "balanced", &place_balanced},
    {PlacerKind::refine, "refine", &place_refine},
    {PlacerKind::round_robin, "round-robin", &place_round_robin},
    {PlacerKind::random, "random", &place_random},
    {PlacerKind::rl, "rl", &place_rl},
    {PlacerKind::even_layers, "even-layers", &place_even_layers},
    {PlacerKind::deepspeed_uniform, "deepspeed-uniform", &place_deepspeed_uniform},
    {PlacerKind::deepspeed_parameters, "deepspeed-parameters", &place_deepspeed_parameters},
}};

const PlacerEntry& entry_of(PlacerKind kind) {
  for (const PlacerEntry& entry : kPlacers) {
    if (entry.kind == kind) return entry;
  }
  throw_invalid("unknown placer kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

const std::vector<std::string>& placer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const PlacerEntry& entry : kPlacers) all.emplace_back(entry.name);
    return all;
  }();
  return names;
}

PlacerKind placer_kind_by_name(std::string_view name) {
  for (const PlacerEntry& entry : kPlacers) {
    if (name == entry.name) return entry.kind;
  }
  std::string valid;
  for (const std::string& known : placer_names()) valid += (valid.empty() ? "" : ", ") + known;
  throw_invalid("unknown placer '" + std::string(name) + "' (valid: " + valid + ")");
}

std::string to_string(PlacerKind kind) {
  return entry_of(kind).name;
}

Placer placer_of(PlacerKind kind) {
  return entry_of(kind).function;
}

Placer placer_by_name(std::string_view name) {
  return placer_of(placer_kind_by_name(name));
}

}  // namespace interplace::placement
