#include "fake_runner.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/profile.hpp"

namespace interplace::runs::testing {
namespace {

double fake_step_s() {
  const char* text = std::getenv("INTERPLACE_FAKE_STEP_S");
  return text != nullptr ? std::atof(text) : 0.02;
}

// The runtime's data check, reduced to what the test needs: a gzip magic number.
void check_data_dir(const TrainConfig& c) {
  if (c.data_dir.empty()) return;
  const std::string file = c.data_dir + "/train-images-idx3-ubyte.gz";
  std::ifstream in(file, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  if (!in || magic[0] != 0x1f || magic[1] != 0x8b) {
    throw_runtime(file + " is corrupt: not a gzip file");
  }
}

std::vector<std::string> gather(MPI_Comm comm, const std::string& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  char buffer[256] = {};
  mine.copy(buffer, sizeof buffer - 1);
  std::vector<char> all(256 * static_cast<size_t>(size));
  MPI_Gather(buffer, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + 256 * r);
  return out;
}

}  // namespace

TrainPlan fake_plan(const TrainConfig& c) {
  if (c.batch_size % c.micro_batches != 0) {
    throw_invalid("micro_batches " + std::to_string(c.micro_batches) +
                  " does not divide batch_size " + std::to_string(c.batch_size));
  }
  TrainPlan plan;
  plan.config = c;
  plan.family = placement::find_model(c.model).family;
  placement::ModelOptions options = c.model_options;
  options.batch_size = micro_batch_size(c.batch_size, c.micro_batches, {}, c.data_parallel);
  plan.graph = placement::build_model(c.model, options);
  const placement::DevicePreset& preset = placement::device_preset_by_name(c.cost_device);
  // The profile a sweep measured (profile:auto), as plan_training takes it.
  const placement::CostModel cost_model =
      c.measured_profile
          ? placement::CostModel::from_profile(*c.measured_profile, preset.device, c.optimizer)
          : placement::CostModel(preset.device, preset.link, c.optimizer);
  const placement::NodeCosts costs = cost_model.node_costs(plan.graph);
  placement::OrderOptions order_options;
  order_options.seed = c.seed;
  for (placement::NodeId id = 0; id < plan.graph.node_count(); ++id) {
    order_options.node_cost.push_back(costs.compute_s(id));
  }
  plan.order = placement::compute_order(plan.graph, c.order.kind(), order_options);
  placement::PlacementRequest request{.device_count = c.devices, .cost_model = cost_model};
  request.micro_batches = c.micro_batches;
  request.seed = c.seed;
  plan.placement = placement::placer_of(c.placer.kind())(plan.graph, plan.order, request);
  placement::StepRequest step;
  step.strategy = c.strategy;
  const bool global = c.strategy.kind == placement::StrategyKind::global;
  if (global) step.pipeline = config_pipeline(c);
  step.micro_batches = c.micro_batches;
  step.data_parallel = c.data_parallel;
  try {
    plan.prediction = placement::simulate_step(plan.graph, plan.placement, costs, cost_model, step);
  } catch (const Error& e) {
    if (!global) throw;
    plan.global_only_reason = e.what();
  }
  plan.reach = plan.prediction.reach;
  plan.graph_stats = placement::compute_graph_stats(plan.graph);
  plan.parameter_count = plan.graph.total_parameter_count();
  return plan;
}

TrainResult fake_train(const TrainPlan& plan, MPI_Comm comm) {
  const TrainConfig& c = plan.config;
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size != c.ranks()) throw_invalid("communicator size differs from devices x replicas");
  check_data_dir(c);
  TrainResult result;
  const double pause = fake_step_s();
  auto measured_start = std::chrono::steady_clock::now();
  for (int s = 0; s < c.warmup_steps + c.steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    if (s == c.warmup_steps) measured_start = start;
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    MPI_Barrier(comm);
    double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<double> all(static_cast<size_t>(size));
    MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, comm);
    StepRecord step;
    step.step = s;
    step.warmup = s < c.warmup_steps;
    step.loss = 2.3 * std::exp(-c.learning_rate * s) + 1e-3 * static_cast<double>(c.seed % 7);
    step.accuracy = 0.1 + 0.05 * s;
    for (int k = 0; k < size; ++k) {
      RankStepRecord r;
      r.step_s = all[static_cast<size_t>(k)];
      r.forward_s = r.step_s / 3;
      r.backward_s = r.step_s / 2;
      r.idle_s = r.step_s - r.forward_s - r.backward_s;
      r.overhead_s = r.idle_s;
      r.bytes_sent = k + 1 < size ? 1000 : 0;
      r.peak_memory_bytes = 1 << 20;
      r.forward_cpu_s = r.forward_s;
      r.backward_cpu_s = r.backward_s;
      r.step_cpu_s = r.forward_cpu_s + r.backward_cpu_s;
      step.ranks.push_back(r);
      step.step_time_s = std::max(step.step_time_s, r.step_s);
    }
    for (int k = 0; k < c.devices; ++k) {  // per stage
      step.aux_loss.push_back(k + 1 < c.devices ? step.loss + 0.1 : NAN);
      step.aux_accuracy.push_back(k + 1 < c.devices ? step.accuracy : NAN);
    }
    result.steps.push_back(step);
  }
  // CPU time as a rank alone on its core would have it: the interval's length.
  result.timeline = {{0, "forward", 0.0, pause / 3, "F0", 0, -1, -1, pause / 3},
                     {0, "backward", pause / 3, pause, "B0", 0, 0, -1, pause * 2 / 3}};
  result.measured_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - measured_start).count();
  result.samples_per_s = static_cast<double>(c.steps * c.batch_size) / result.measured_wall_s;
  result.eval_loss = c.eval_samples > 0 ? 1.5 : NAN;
  result.eval_accuracy = c.eval_samples > 0 ? 0.5 : NAN;
  result.eval_samples = c.eval_samples;
  char host[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(host, &length);
  result.hosts = gather(comm, std::string(host, static_cast<size_t>(length)));
  result.device_names = gather(comm, "cpu: fake");
  return result;
}

// A profile of the configuration's graph without measuring: every node 0.1 ms forward and
// 0.2 ms backward, the cost_device preset's link; rank 0's text, after a barrier.
std::string fake_profile(const TrainConfig& c, int threads, MPI_Comm comm) {
  MPI_Barrier(comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != 0) return "";
  placement::ModelOptions options = c.model_options;
  options.batch_size = micro_batch_size(c.batch_size, c.micro_batches);
  const placement::Graph graph = placement::build_model(c.model, options);
  placement::Profile profile;
  profile.device_name = "fake (" + std::to_string(threads) + " threads)";
  profile.batch_size = graph.batch_size();
  for (const placement::Node& node : graph.nodes())
    profile.nodes.push_back({node.name, 1e-4, 2e-4});
  profile.link = placement::device_preset_by_name(c.cost_device).link;
  std::ostringstream text;
  text << "# fake profile (tests/runs/fake_runner.cpp)\n";
  placement::write_profile(text, profile);
  return text.str();
}

SweepRunner fake_runner() {
  return {fake_plan, fake_train, fake_profile};
}

}  // namespace interplace::runs::testing
