// Graph nodes as real kernel layers. An op name plus attributes fully describes a layer;
// the zoo builds nodes through this factory and the runtime instantiates its partition
// with it.
#pragma once

#include <memory>
#include <string_view>

#include "interplace/kernels/layer.hpp"
#include "interplace/placement/graph.hpp"

namespace interplace::placement {

// Throws invalid_input naming the op (and listing the known ones) or the missing or
// mistyped attribute.
std::unique_ptr<kernels::Layer> make_layer(std::string_view op, const Attributes& attributes);
inline std::unique_ptr<kernels::Layer> make_layer(const Node& node) {
  return make_layer(node.op, node.attributes);
}

// The ops make_layer knows, with the attributes each takes.
const std::vector<std::string>& layer_op_names();

}  // namespace interplace::placement
