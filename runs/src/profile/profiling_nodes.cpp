// Per-node kernel timings for `interplace profile` (see profiling.hpp).
#include <time.h>
#include <algorithm>

#include <chrono>
#include <fstream>
#include <memory>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/layers/tied_linear.hpp"
#include "interplace/kernels/median.hpp"
#include "interplace/kernels/random.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/layer_factory.hpp"
#include "interplace/runs/profiling.hpp"

namespace interplace::runs {
namespace {

using kernels::Tensor;
using placement::Node;
using Clock = std::chrono::steady_clock;

using kernels::median;

// Seconds on the clock the options ask for: the wall clock, or this thread's CPU time.
double now_s(bool cpu_time) {
  if (cpu_time) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

Tensor random_tensor(const kernels::Shape& shape, kernels::Rng& rng, int64_t vocabulary,
                     kernels::Device device) {
  Tensor host(shape);
  float* data = host.data();
  for (int64_t i = 0; i < host.numel(); ++i) {
    data[i] = vocabulary > 0
                  ? static_cast<float>(rng.next_u64() % static_cast<uint64_t>(vocabulary))
                  : rng.normal(0.0f, 1.0f);
  }
  return host.to(device);
}

// The smallest vocabulary among the embeddings an input feeds (0: it feeds none).
int64_t vocabulary_of(const placement::Graph& graph, const Node& input) {
  int64_t vocabulary = 0;
  for (placement::NodeId id : input.successors) {
    const Node& consumer = graph.node(id);
    if (consumer.op != "embedding") continue;
    const int64_t v = std::get<int64_t>(consumer.attributes.at("vocab_size"));
    vocabulary = vocabulary == 0 ? v : std::min(vocabulary, v);
  }
  return vocabulary;
}

kernels::Parameter& owner_parameter(kernels::Layer& owner, const std::string& name,
                                    const std::string& owner_name) {
  for (kernels::Parameter* p : owner.parameters()) {
    if (p->name == name) return *p;
  }
  throw_invalid("tied head: node " + owner_name + " has no parameter " + name);
}

// Opaque nodes: FLOPs at the rate the measured nodes achieved (their FLOPs over their
// times, forward and backward apart), or the bytes they move at the given bandwidth, the
// longer; with nothing measured, 1e11 FLOP/s.
void estimate_opaque_nodes(const placement::Graph& graph, const NodeTimingOptions& options,
                           std::vector<placement::NodeTiming>& timings) {
  double forward_flops = 0.0, forward_s = 0.0, backward_flops = 0.0, backward_s = 0.0;
  for (const Node& node : graph.nodes()) {
    if (node.op == "input" || node.op == placement::kOpaqueOp) continue;
    const placement::NodeTiming& t = timings[static_cast<size_t>(node.id)];
    forward_flops += static_cast<double>(node.forward_flops);
    forward_s += t.forward_s;
    backward_flops += static_cast<double>(node.backward_flops);
    backward_s += t.backward_s;
  }
  const double fallback = 1e11;
  const double forward_rate =
      forward_s > 0.0 && forward_flops > 0.0 ? forward_flops / forward_s : fallback;
  const double backward_rate =
      backward_s > 0.0 && backward_flops > 0.0 ? backward_flops / backward_s : forward_rate;
  for (const Node& node : graph.nodes()) {
    if (node.op != placement::kOpaqueOp) continue;
    double bytes = static_cast<double>(node.output_bytes);
    for (placement::NodeId input : node.inputs) {
      bytes += static_cast<double>(graph.node(input).output_bytes);
    }
    const double moved_s = bytes / options.estimate_bandwidth_bytes_per_s;
    placement::NodeTiming& t = timings[static_cast<size_t>(node.id)];
    t.forward_s = std::max(static_cast<double>(node.forward_flops) / forward_rate, moved_s);
    t.backward_s = std::max(static_cast<double>(node.backward_flops) / backward_rate, 2 * moved_s);
    t.backward_input_s = t.backward_s;
  }
}

}  // namespace

std::vector<placement::NodeTiming> time_nodes(const placement::Graph& graph,
                                              const NodeTimingOptions& options) {
  if (options.repeats < 1) {
    throw_invalid("repeats must be >= 1, got " + std::to_string(options.repeats));
  }
  if (options.warmup < 0) {
    throw_invalid("warm-up runs must be >= 0, got " + std::to_string(options.warmup));
  }
  kernels::Backend& backend = kernels::backend_for(options.device);
  kernels::Rng rng(options.seed);
  const auto count = static_cast<size_t>(graph.node_count());
  // Layers stay alive: a tied head binds to its owner's parameter.
  std::vector<std::unique_ptr<kernels::Layer>> layers(count);
  std::vector<Tensor> outputs(count);
  // Consumers still to run per node, so that outputs are freed as soon as possible.
  std::vector<size_t> pending(count);
  for (const Node& node : graph.nodes())
    pending[static_cast<size_t>(node.id)] = node.successors.size();

  std::vector<placement::NodeTiming> timings;
  timings.reserve(count);
  for (const Node& node : graph.nodes()) {
    const auto id = static_cast<size_t>(node.id);
    timings.push_back({node.name, 0.0, 0.0, 0.0});
    if (node.op == "input") {
      outputs[id] =
          random_tensor(node.output_shape, rng, vocabulary_of(graph, node), options.device);
      continue;
    }
    if (node.op == placement::kOpaqueOp) {  // no layer to run: estimated below
      outputs[id] = random_tensor(node.output_shape, rng, 0, options.device);
      continue;
    }
    layers[id] = placement::make_layer(node);
    kernels::Layer& layer = *layers[id];
    layer.init_parameters(rng);
    layer.to(options.device);
    if (node.op == "tied_linear") {
      const std::string& owner = std::get<std::string>(node.attributes.at("tied_to"));
      const std::string& parameter = std::get<std::string>(node.attributes.at("tied_parameter"));
      dynamic_cast<kernels::TiedLinear&>(layer).bind(
          owner_parameter(*layers.at(static_cast<size_t>(graph.id_of(owner))), parameter, owner));
    }
    std::vector<Tensor> inputs;
    for (placement::NodeId input : node.inputs)
      inputs.push_back(outputs[static_cast<size_t>(input)]);
    const Tensor grad_output = random_tensor(node.output_shape, rng, 0, options.device);

    std::vector<double> forward_s, backward_s, backward_input_s;
    Tensor output;
    for (int run = 0; run < options.warmup + options.repeats; ++run) {
      kernels::Context ctx;
      backend.synchronize();
      const double t0 = now_s(options.cpu_time);
      output = layer.forward(inputs, ctx);
      backend.synchronize();
      const double t1 = now_s(options.cpu_time);
      layer.zero_grad();
      backend.synchronize();
      const double t2 = now_s(options.cpu_time);
      layer.backward(grad_output, ctx);
      backend.synchronize();
      const double t3 = now_s(options.cpu_time);
      // The pass of interlocking backpropagation through a stage it does not train.
      layer.backward(grad_output, ctx, kernels::Gradients::inputs_only);
      backend.synchronize();
      const double t4 = now_s(options.cpu_time);
      if (run < options.warmup) continue;
      forward_s.push_back(t1 - t0);
      backward_s.push_back(t3 - t2);
      backward_input_s.push_back(t4 - t3);
    }
    timings.back().forward_s = median(forward_s);
    timings.back().backward_s = median(backward_s);
    timings.back().backward_input_s = median(backward_input_s);
    outputs[id] = output;
    for (placement::NodeId producer : node.predecessors) {  // distinct, unlike inputs
      if (--pending[static_cast<size_t>(producer)] == 0)
        outputs[static_cast<size_t>(producer)] = Tensor();
    }
    layer.zero_grad();
  }
  estimate_opaque_nodes(graph, options, timings);
  return timings;
}

std::string cpu_device_name(int threads) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) model = line.substr(colon + 2);
    break;
  }
  return model + " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
}

std::map<std::string, std::pair<double, double>> time_aux_heads(const placement::Graph& graph,
                                                                double width_multiplier,
                                                                const NodeTimingOptions& options) {
  std::map<std::string, placement::Graph> heads;
  for (const std::string& width : placement::aux_head_width_names()) {
    heads.merge(placement::distinct_aux_heads(
        graph,
        {.width_multiplier = width_multiplier, .width = placement::aux_head_width_by_name(width)}));
  }
  std::map<std::string, std::pair<double, double>> timed;
  for (const auto& [key, head] : heads) {
    std::pair<double, double> sums{0.0, 0.0};
    for (const placement::NodeTiming& layer : time_nodes(head, options)) {
      sums.first += layer.forward_s;
      sums.second += layer.backward_s;
    }
    timed.emplace(key, sums);
  }
  return timed;
}

}  // namespace interplace::runs
