#include "same_sequence.hpp"

#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs::sweep {
namespace {

// The canonical parameters with one order for all: what siblings share.
std::string sibling_key(const SweepConfig& c) {
  TrainConfig any_order = c.train;
  any_order.order = placement::OrderKind::topo;
  return canonical_parameters(any_order, c.repeat);
}

}  // namespace

std::string same_sequence_reason(const std::string& twin) {
  return "the same node sequence as order '" + twin + "' (placed once)";
}

SameSequence::SameSequence(const SweepSpec& spec) {
  for (const SweepConfig& c : spec.configs) {
    if (c.train.simulate_only) siblings_[sibling_key(c)].push_back(&c);
  }
}

uint64_t SameSequence::digest(const SweepConfig& config) {
  const auto found = digests_.find(config.id);
  if (found != digests_.end()) return found->second;
  std::string text;
  for (const placement::NodeId id : config_node_order(config.train)) {
    text += std::to_string(id) + ",";
  }
  return digests_[config.id] = fnv1a64(text);
}

std::string SameSequence::earlier_twin(const SweepConfig& config) {
  const auto group = siblings_.find(sibling_key(config));
  if (group == siblings_.end()) return "";
  for (const SweepConfig* other : group->second) {
    if (other->index >= config.index) break;
    if (other->train.order != config.train.order && digest(*other) == digest(config)) {
      return to_string(other->train.order);
    }
  }
  return "";
}

}  // namespace interplace::runs::sweep
