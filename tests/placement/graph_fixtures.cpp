#include "graph_fixtures.hpp"

#include "interplace/kernels/random.hpp"

namespace interplace::placement::testing {

Graph graph_from_inputs(const std::vector<std::vector<NodeId>>& inputs, int64_t flops) {
  Graph graph("fixture", 1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeSpec spec;
    spec.name = std::string("n").append(std::to_string(i));
    spec.op = "linear";
    spec.inputs = inputs[i];
    spec.output_shape = {1, 4};
    spec.forward_flops = flops;
    spec.backward_flops = 2 * flops;
    spec.parameter_grad_flops = flops;  // a linear layer's weight GEMM
    spec.parameter_count = 10;
    graph.add_node(spec);
  }
  return graph;
}

Graph diamond() {
  return graph_from_inputs({{}, {0}, {0}, {1, 2}});
}

Graph two_components_with_skip() {
  Graph graph("two_components", 2);
  auto add = [&](std::string name, std::vector<NodeId> inputs) {
    NodeSpec spec;
    spec.name = std::move(name);
    spec.op = "op";
    spec.inputs = std::move(inputs);
    spec.output_shape = {2, 8};
    spec.forward_flops = 10;
    spec.backward_flops = 20;
    return graph.add_node(spec);
  };
  add("input", {});
  add("block.conv", {0});
  add("block.bn", {1});
  add("add", {2, 0});
  add("aux.input", {});
  add("aux.linear", {4});
  add("head", {3});
  return graph;
}

Graph chain(int count, int64_t flops) {
  std::vector<std::vector<NodeId>> inputs(count);
  for (int i = 1; i < count; ++i) inputs[i] = {i - 1};
  return graph_from_inputs(inputs, flops);
}

Graph random_dag(int count, double edge_probability, uint64_t seed, int max_inputs) {
  kernels::Rng rng(seed);
  Graph graph("random", 4);
  for (int i = 0; i < count; ++i) {
    NodeSpec spec;
    spec.name = std::string("node").append(std::to_string(i));
    spec.op = "op";
    for (int j = i - 1; j >= 0 && static_cast<int>(spec.inputs.size()) < max_inputs; --j) {
      // Favour recent producers so the DAG is deep rather than a flat fan-in.
      const double p = (i - j <= 3) ? 0.6 : edge_probability;
      if (rng.uniform() < p) spec.inputs.push_back(static_cast<NodeId>(j));
    }
    const int64_t width = 1 + static_cast<int64_t>(rng.next_u64() % 64);
    spec.output_shape = {4, width};
    spec.forward_flops = 1000 + static_cast<int64_t>(rng.next_u64() % 100000);
    spec.backward_flops = 2 * spec.forward_flops;
    spec.parameter_count = static_cast<int64_t>(rng.next_u64() % 5000);
    graph.add_node(spec);
  }
  return graph;
}

CostModel timed_cost_model(const Graph& graph, const std::vector<double>& forward_s,
                           const std::vector<double>& backward_s, LinkSpec link,
                           int64_t capacity_bytes) {
  Profile profile;
  profile.device_name = "timed";
  profile.batch_size = graph.batch_size();
  profile.link = link;
  for (const Node& node : graph.nodes()) {
    profile.nodes.push_back({node.name, forward_s.at(node.id), backward_s.at(node.id)});
  }
  return CostModel::from_profile(profile, {"timed", 1e12, 1e12, capacity_bytes});
}

}  // namespace interplace::placement::testing
