#include "interplace/placement/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "interplace/kernels/error.hpp"

namespace interplace::placement {
namespace {

constexpr int64_t kBytesPerParameter = 4;  // fp32

constexpr std::array<std::pair<OptimizerKind, const char*>, 4> kOptimizerNames = {{
    {OptimizerKind::sgd, "sgd"},
    {OptimizerKind::sgd_momentum, "sgd-momentum"},
    {OptimizerKind::sgd_nesterov, "sgd-nesterov"},
    {OptimizerKind::adamw, "adamw"},
}};

void validate(const DeviceSpec& device, const LinkSpec& link) {
  const std::string where = "device '" + device.name + "': ";
  if (!(device.peak_flops_per_s > 0.0) || !std::isfinite(device.peak_flops_per_s)) {
    throw_invalid(where + "peak_flops_per_s must be finite and > 0");
  }
  if (!(device.memory_bandwidth_bytes_per_s > 0.0) ||
      !std::isfinite(device.memory_bandwidth_bytes_per_s)) {
    throw_invalid(where + "memory_bandwidth_bytes_per_s must be finite and > 0");
  }
  if (device.memory_capacity_bytes <= 0) {
    throw_invalid(where + "memory_capacity_bytes must be > 0, got " +
                  std::to_string(device.memory_capacity_bytes));
  }
  if (!(link.latency_s >= 0.0) || !std::isfinite(link.latency_s)) {
    throw_invalid("link latency_s must be finite and >= 0");
  }
  if (!(link.bandwidth_bytes_per_s > 0.0)) throw_invalid("link bandwidth_bytes_per_s must be > 0");
  if (link.devices_per_node < 0) {
    throw_invalid("link devices_per_node must be >= 0 (0: one node), got " +
                  std::to_string(link.devices_per_node));
  }
  if (!(link.inter_node_latency_s >= 0.0) || !std::isfinite(link.inter_node_latency_s)) {
    throw_invalid("link inter_node_latency_s must be finite and >= 0");
  }
  if (!(link.inter_node_bandwidth_bytes_per_s > 0.0)) {
    throw_invalid("link inter_node_bandwidth_bytes_per_s must be > 0");
  }
}

int64_t input_bytes(const Graph& graph, const Node& node) {
  int64_t bytes = 0;
  for (NodeId pred : node.predecessors) bytes += graph.nodes()[pred].output_bytes;
  return bytes;
}

}  // namespace

OptimizerKind optimizer_by_name(std::string_view name) {
  std::string valid;
  for (const auto& [kind, known] : kOptimizerNames) {
    if (name == known) return kind;
    valid += (valid.empty() ? "" : ", ") + std::string(known);
  }
  throw_invalid("unknown optimizer '" + std::string(name) + "' (valid: " + valid + ")");
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kOptimizerNames) out.emplace_back(entry.second);
    return out;
  }();
  return names;
}

std::string to_string(OptimizerKind kind) {
  for (const auto& [k, name] : kOptimizerNames) {
    if (k == kind) return name;
  }
  throw_invalid("unknown optimizer kind " + std::to_string(static_cast<int>(kind)));
}

int optimizer_state_factor(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
      return 0;
    case OptimizerKind::sgd_momentum:
    case OptimizerKind::sgd_nesterov:
      return 1;  // velocity
    case OptimizerKind::adamw:
      return 2;  // first and second moments
  }
  throw_invalid("unknown optimizer kind " + std::to_string(static_cast<int>(kind)));
}

CostModel::CostModel(DeviceSpec device, LinkSpec link, OptimizerKind optimizer)
    : device_(std::move(device)), link_(link), optimizer_(optimizer) {
  validate(device_, link_);
  optimizer_state_factor(optimizer_);  // rejects values outside the enum
}

CostModel CostModel::from_profile(Profile profile, DeviceSpec device, OptimizerKind optimizer) {
  if (!device.name.empty() && device.name != profile.device_name) {
    throw_invalid("the profile was measured on '" + profile.device_name + "', not on '" +
                  device.name + "'");
  }
  device.name = profile.device_name;
  CostModel model(std::move(device), profile.link, optimizer);
  model.profile_ = std::move(profile);
  return model;
}

void CostModel::set_ranks_per_host(int ranks) {
  if (ranks < 0) {
    throw_invalid("ranks per host must be >= 0 (0: all on one host), got " + std::to_string(ranks));
  }
  ranks_per_host_ = ranks;
}

ComputeSharing CostModel::compute_sharing(int devices) const {
  if (!profile_ || profile_->host_sharing.empty()) return {};
  return ComputeSharing::consecutive(devices, ranks_per_host_ > 0 ? ranks_per_host_ : devices,
                                     profile_->host_sharing);
}

double CostModel::mini_batch_overhead_s(int64_t samples) const {
  if (!profile_ || std::isnan(profile_->runtime_overhead_s) || profile_->batch_size < 1) {
    return 0.0;
  }
  return profile_->runtime_overhead_s * static_cast<double>(samples) /
         static_cast<double>(profile_->batch_size);
}

double CostModel::transfer_s(int64_t bytes) const {
  return link_.latency_s + static_cast<double>(bytes) / link_.bandwidth_bytes_per_s;
}

double CostModel::roofline_s(int64_t flops, int64_t bytes) const {
  return std::max(static_cast<double>(flops) / device_.peak_flops_per_s,
                  static_cast<double>(bytes) / device_.memory_bandwidth_bytes_per_s);
}

int64_t CostModel::parameter_state_bytes(int64_t parameter_count) const {
  return parameter_count * kBytesPerParameter * (2 + optimizer_state_factor(optimizer_));
}

namespace {

// Times that overflow to infinity (a tiny --device-flops, a huge model) would reach the
// placers, which would blame memory ("no split ... fits"): say what overflowed.
// The runtime's whole-graph units (profile runtime_*_s) minus the sum of the per-node
// times is what the runtime spends beyond the kernels timed one by one (the loss, gradient
// sums at fan-outs, fresh buffers, bookkeeping). It is spread evenly over the graph's
// compute nodes, so every stage is charged by its node count; a node's time stays >= 0.
void calibrate_to_runtime(const Graph& graph, const Profile& profile, NodeCosts& costs) {
  int compute_nodes = 0;
  double forward_sum = 0.0, backward_sum = 0.0;
  for (const Node& node : graph.nodes()) {
    if (node.op == "input") continue;
    ++compute_nodes;
    forward_sum += costs.forward_s[node.id];
    backward_sum += costs.backward_s[node.id];
  }
  if (compute_nodes == 0) return;
  const auto spread = [&](double runtime_s, double sum_s) {
    return std::isnan(runtime_s) ? 0.0 : (runtime_s - sum_s) / compute_nodes;
  };
  const double forward_extra_s = spread(profile.runtime_forward_s, forward_sum);
  const double backward_extra_s = spread(profile.runtime_backward_s, backward_sum);
  for (const Node& node : graph.nodes()) {
    if (node.op == "input") continue;
    costs.forward_s[node.id] = std::max(0.0, costs.forward_s[node.id] + forward_extra_s);
    costs.backward_s[node.id] = std::max(0.0, costs.backward_s[node.id] + backward_extra_s);
    costs.backward_input_s[node.id] =
        std::max(0.0, costs.backward_input_s[node.id] + backward_extra_s);
  }
}

// A tied head's owner and its shared weight's replica (values and gradient; replicas
// are not stepped, so no optimiser state): in x out parameters.
void record_replicas(const Graph& graph, NodeCosts& costs) {
  for (const Node& node : graph.nodes()) {
    if (node.op != "tied_linear") continue;
    if (costs.replica_owner.empty()) {
      costs.replica_owner.assign(static_cast<size_t>(graph.node_count()), -1);
      costs.replica_bytes.assign(static_cast<size_t>(graph.node_count()), 0);
    }
    const auto text = node.attributes.find("tied_to");
    const auto in = node.attributes.find("in_features");
    const auto out = node.attributes.find("out_features");
    if (text == node.attributes.end() || in == node.attributes.end() ||
        out == node.attributes.end() || !std::holds_alternative<std::string>(text->second) ||
        !std::holds_alternative<int64_t>(in->second) ||
        !std::holds_alternative<int64_t>(out->second)) {
      throw_invalid("tied head " + node.name + ": needs tied_to, in_features and out_features");
    }
    costs.replica_owner[node.id] = graph.id_of(std::get<std::string>(text->second));
    costs.replica_bytes[node.id] =
        2 * kBytesPerParameter * std::get<int64_t>(in->second) * std::get<int64_t>(out->second);
  }
}

NodeCosts require_finite_times(const Graph& graph, NodeCosts costs) {
  for (const Node& node : graph.nodes()) {
    for (double t :
         {costs.forward_s[node.id], costs.backward_s[node.id], costs.backward_input_s[node.id]}) {
      if (!std::isfinite(t) || t < 0.0) {
        throw_invalid("node '" + node.name + "' of graph '" + graph.name() + "' has a time of " +
                      std::to_string(t) + " s (" + std::to_string(node.forward_flops) +
                      " forward FLOPs): the device's speed or the profile is out of range");
      }
    }
  }
  return costs;
}

// Node names alone do not tell a profile of resnet20 at width 1 from one at width 4 (or
// another image size): the totals the profile recorded must be the graph's.
void check_profile_graph(const Profile& profile, const Graph& graph) {
  const int64_t parameters = graph.total_parameter_count();
  const int64_t forward_flops = graph.total_forward_flops();
  const bool parameters_differ =
      profile.graph_parameter_count > 0 && profile.graph_parameter_count != parameters;
  const bool flops_differ =
      profile.graph_forward_flops > 0 && profile.graph_forward_flops != forward_flops;
  if (parameters_differ || flops_differ) {
    throw_invalid("the profile was measured on a graph of " +
                  std::to_string(profile.graph_parameter_count) + " parameters and " +
                  std::to_string(profile.graph_forward_flops) + " forward FLOPs, but graph '" +
                  graph.name() + "' has " + std::to_string(parameters) + " and " +
                  std::to_string(forward_flops) +
                  " (other model options: width, depth, image size, channels, classes or "
                  "sequence length). HINT: profile with the same model options as the run");
  }
}

}  // namespace

NodeCosts CostModel::node_costs(const Graph& graph) const {
  const int n = graph.node_count();
  NodeCosts costs;
  costs.forward_s.resize(n);
  costs.backward_s.resize(n);
  costs.backward_input_s.resize(n);
  costs.parameter_state_bytes.resize(n);
  costs.output_bytes.resize(n);
  for (const Node& node : graph.nodes()) {
    costs.parameter_state_bytes[node.id] = parameter_state_bytes(node.parameter_count);
    costs.output_bytes[node.id] = node.output_bytes;
  }
  record_replicas(graph, costs);
  if (!profile_) {
    for (const Node& node : graph.nodes()) {
      const int64_t bytes =
          input_bytes(graph, node) + node.output_bytes + node.parameter_count * kBytesPerParameter;
      costs.forward_s[node.id] = roofline_s(node.forward_flops, bytes);
      costs.backward_s[node.id] = roofline_s(node.backward_flops, bytes);
      costs.backward_input_s[node.id] =
          roofline_s(node.backward_flops - node.parameter_grad_flops, bytes);
    }
    return require_finite_times(graph, std::move(costs));
  }
  if (profile_->batch_size != graph.batch_size()) {
    // Graphs and profiles are per micro-batch (batch size / micro-batches).
    throw_invalid("the profile was measured at micro-batch size " +
                  std::to_string(profile_->batch_size) + " but graph '" + graph.name() +
                  "' is built for micro-batch size " + std::to_string(graph.batch_size()) +
                  ". HINT: profile with the same --batch-size and --micro-batches as the run");
  }
  check_profile_graph(*profile_, graph);
  std::vector<char> covered(n, 0);
  for (const NodeTiming& timing : profile_->nodes) {
    const auto id = graph.find(timing.name);
    if (!id) {
      throw_invalid("the profile has node '" + timing.name + "' that graph '" + graph.name() +
                    "' does not have (a profile of another model?)");
    }
    costs.forward_s[*id] = timing.forward_s;
    costs.backward_s[*id] = timing.backward_s;
    // Profiles from before input-only backward passes were timed: the measured backward
    // scaled by the share of its FLOPs that the input gradient needs.
    const Node& node = graph.node(*id);
    costs.backward_input_s[*id] =
        !std::isnan(timing.backward_input_s) ? timing.backward_input_s
        : node.backward_flops > 0
            ? timing.backward_s *
                  static_cast<double>(node.backward_flops - node.parameter_grad_flops) /
                  static_cast<double>(node.backward_flops)
            : timing.backward_s;
    // Times inside the runtime's own steps, where measured: what a pass pays for the node
    // (cold caches, fresh buffers, the loss at the sink). The input-only backward keeps the
    // share of the backward that it takes alone: the runtime's extra (cold activations and
    // gradients) falls on the input- and the parameter-gradient kernels alike (the
    // measurement that chose this: docs/simulator.md).
    if (!std::isnan(timing.runtime_forward_s) && !std::isnan(timing.runtime_backward_s)) {
      const double input_share =
          costs.backward_s[*id] > 0.0
              ? std::min(1.0, costs.backward_input_s[*id] / costs.backward_s[*id])
              : 1.0;
      costs.forward_s[*id] = timing.runtime_forward_s;
      costs.backward_s[*id] = timing.runtime_backward_s;
      costs.backward_input_s[*id] = timing.runtime_backward_s * input_share;
    }
    covered[*id] = 1;
  }
  for (const Node& node : graph.nodes()) {
    if (!covered[node.id]) {
      throw_invalid("the profile has no times for node '" + node.name + "' of graph '" +
                    graph.name() + "'");
    }
  }
  calibrate_to_runtime(graph, *profile_, costs);
  return require_finite_times(graph, std::move(costs));
}

bool CostModel::has_working_set_factor() const {
  return profile_ && !profile_->runtime_in_flight.empty() && profile_->runtime_forward_s > 0.0 &&
         profile_->runtime_backward_s > 0.0;
}

WorkingSetFactor CostModel::working_set_factor(const NodeCosts& costs, int64_t bytes) const {
  if (!has_working_set_factor()) return {};
  // sum over nodes of memory_bytes(node, M) = parameter state + M x output bytes.
  double parameter_state = 0.0, outputs = 0.0;
  for (NodeId id = 0; id < costs.node_count(); ++id) {
    parameter_state += static_cast<double>(costs.parameter_state_bytes[id]);
    outputs += static_cast<double>(costs.output_bytes[id]);
  }
  const auto working_set = [&](int in_flight) { return parameter_state + in_flight * outputs; };
  // (bytes, factors) ascending in M, hence in bytes; M = 1 is the profile's baseline.
  struct Point {
    double bytes;
    WorkingSetFactor factor;
  };
  std::vector<Point> points{{working_set(1), {}}};
  for (const auto& [m, times] : profile_->runtime_in_flight) {
    points.push_back(
        {working_set(m),
         {times.first / profile_->runtime_forward_s, times.second / profile_->runtime_backward_s}});
  }
  const auto at = static_cast<double>(bytes);
  if (at <= points.front().bytes) return points.front().factor;
  for (size_t i = 1; i < points.size(); ++i) {
    const Point& lo = points[i - 1];
    const Point& hi = points[i];
    if (at > hi.bytes) continue;
    const double t = hi.bytes > lo.bytes ? (at - lo.bytes) / (hi.bytes - lo.bytes) : 1.0;
    return {lo.factor.forward + t * (hi.factor.forward - lo.factor.forward),
            lo.factor.backward + t * (hi.factor.backward - lo.factor.backward)};
  }
  return points.back().factor;
}

std::vector<int64_t> NodeCosts::replica_bytes_per_device(const std::vector<int>& device_of_node,
                                                         int device_count) const {
  std::vector<int64_t> bytes(static_cast<size_t>(std::max(device_count, 0)), 0);
  std::set<std::pair<int, NodeId>> held;  // (device, owner) replicas counted
  for (size_t id = 0; id < replica_owner.size() && id < device_of_node.size(); ++id) {
    const NodeId owner = replica_owner[id];
    if (owner < 0) continue;
    const int device = device_of_node[id];
    if (device == device_of_node.at(static_cast<size_t>(owner))) continue;
    if (held.insert({device, owner}).second)
      bytes.at(static_cast<size_t>(device)) += replica_bytes[id];
  }
  return bytes;
}

}  // namespace interplace::placement
