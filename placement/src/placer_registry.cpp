#include <array>
#include <string>
#include <utility>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/placers.hpp"

namespace interplace::placement {
namespace {

using PlacerFunction = Placement (*)(const Graph&, const Order&, const PlacementRequest&);

constexpr std::array<std::pair<const char*, PlacerFunction>, 8> kPlacers = {{
    {"contiguous", &place_contiguous},
    {"stages", &place_stages},
    {"greedy-eft", &place_greedy_eft},
    {"balanced", &place_balanced},
    {"refine", &place_refine},
    {"round-robin", &place_round_robin},
    {"random", &place_random},
    {"rl", &place_rl},
}};

}  // namespace

const std::vector<std::string>& placer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& entry : kPlacers) all.emplace_back(entry.first);
    return all;
  }();
  return names;
}

Placer placer_by_name(std::string_view name) {
  for (const auto& [known, function] : kPlacers) {
    if (name == known) return function;
  }
  std::string valid;
  for (const std::string& known : placer_names()) valid += (valid.empty() ? "" : ", ") + known;
  throw_invalid("unknown placer '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace interplace::placement
