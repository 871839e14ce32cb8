// Helpers for recurrent graphs unrolled over time as op-level nodes (enas_rnn.cpp,
// nmt.cpp): per-step slices of a sequence, and weights shared across time steps.
//
// A shared weight is one "linear" node (bias-free) at its first use, the owner; every
// later use is a "tied_linear" node bound to the owner's "weight" (zoo.hpp), so the graph
// counts the weight once and the runtime binds or replicates it like GPT's tied head.
#pragma once

#include <map>
#include <string>

#include "model_builder.hpp"

namespace interplace::placement::zoo {

class RecurrentBuilder {
 public:
  explicit RecurrentBuilder(ModelBuilder& b) : b_(b) {}

  // x W^T for the shared weight `key` [out, in]: the owner node named `name` at its first
  // use, a head tied to it after.
  NodeId shared_linear(const std::string& name, const std::string& key, NodeId x, int64_t out) {
    const int64_t in = b_.shape(x).back();
    const auto owner = owners_.find(key);
    if (owner == owners_.end()) {
      owners_[key] = name;
      return b_.layer(name, "linear",
                      {{"in_features", in}, {"out_features", out}, {"bias", int64_t{0}}}, {x});
    }
    return b_.layer(name, "tied_linear",
                    {{"in_features", in},
                     {"out_features", out},
                     {"tied_to", owner->second},
                     {"tied_parameter", std::string("weight")}},
                    {x});
  }

  // Time step t of a [B, T, D] sequence: [B, 1, D].
  NodeId step(const std::string& name, NodeId sequence, int64_t t) {
    return b_.layer(name, "slice", {{"offset", t}, {"length", int64_t{1}}}, {sequence});
  }

  NodeId unary(const std::string& name, const std::string& op, NodeId x) {
    return b_.unary(name, op, x);
  }
  NodeId add(const std::string& name, NodeId a, NodeId c) {
    return b_.layer(name, "add", {}, {a, c});
  }
  NodeId multiply(const std::string& name, NodeId a, NodeId c) {
    return b_.layer(name, "multiply", {}, {a, c});
  }
  NodeId one_minus(const std::string& name, NodeId x) {
    return b_.layer(name, "affine", {{"scale", -1.0}, {"shift", 1.0}}, {x});
  }

 private:
  ModelBuilder& b_;
  std::map<std::string, std::string> owners_;  // weight key -> owner node name
};

}  // namespace interplace::placement::zoo
