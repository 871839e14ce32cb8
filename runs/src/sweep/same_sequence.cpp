#include "same_sequence.hpp"

#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs::sweep {
namespace {

// The canonical parameters without the order's line: what siblings share.
std::string sibling_key(const SweepConfig& c) {
  const std::string text = canonical_parameters(c.train, c.repeat);
  const size_t at = text.find("order=" + c.train.order + "\n");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n')) return text;
  return text.substr(0, at) + text.substr(at + 7 + c.train.order.size());
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
      return other->train.order;
    }
  }
  return "";
}

}  // namespace interplace::runs::sweep
