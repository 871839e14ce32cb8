// measure_profile: what `interplace profile` and a sweep's `cost_device = "profile:auto"`
// measure (profiling.hpp), collective over the job's ranks.
#include <algorithm>
#include <exception>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/profiling.hpp"

namespace interplace::runs {
namespace {

// The micro-batches in flight of the calibration's pipelined runs (Profile::
// runtime_in_flight): the pipelines sweeps run most (M = 4, 8); between and beyond them
// the cost model interpolates and holds.
constexpr int kInFlightMicroBatches[] = {4, 8};

// Collective over `comm`: the ranks on rank 0's host measure how they slow each other
// down (measure_host_sharing) into run.profile on rank 0; skipped when rank 0 failed or
// runs alone on its host.
void measure_sharing_on_rank0_host(MeasuredProfile& run, const RuntimeUnitOptions& options,
                                   bool skip, MPI_Comm comm) {
  int world_rank = 0;
  check_mpi(MPI_Comm_rank(comm, &world_rank), "MPI_Comm_rank");
  // Rank 0's units alone; 0 when it failed or there is nothing to measure (a CPU-time
  // profile).
  double solo_s = skip ? 0.0 : run.profile.runtime_forward_s + run.profile.runtime_backward_s;
  check_mpi(MPI_Bcast(&solo_s, 1, MPI_DOUBLE, 0, comm), "MPI_Bcast");
  MPI_Comm host = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &host),
            "MPI_Comm_split_type");
  int lowest = world_rank;
  check_mpi(MPI_Allreduce(&world_rank, &lowest, 1, MPI_INT, MPI_MIN, host), "MPI_Allreduce");
  int host_size = 1;
  check_mpi(MPI_Comm_size(host, &host_size), "MPI_Comm_size");
  if (lowest == 0 && host_size > 1 && solo_s > 0.0) {
    kernels::set_cpu_threads(options.threads);
    run.profile.host_sharing = measure_host_sharing(host, options, solo_s);
  }
  MPI_Comm_free(&host);
}

// Thrown past the calibration of a graph that cannot train.
struct NoCalibration {};

}  // namespace

MeasuredProfile measure_profile(const ProfileRequest& o, MPI_Comm comm) {
  // A graph file's network: rebuilt for the micro-batch; with opaque nodes it cannot train,
  // so there is no calibration run (docs/your-network.md).
  const placement::Graph graph =
      o.graph_file.empty()
          ? placement::build_model(o.model, o.options)
          : placement::rebatch_graph(placement::read_graph_file(o.graph_file).graph,
                                     o.options.batch_size);
  const bool trainable = placement::opaque_nodes(graph).empty();
  int rank = 0;
  MeasuredProfile run;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &run.ranks), "MPI_Comm_size");
  // On a GPU the link is timed device to device through the runtime's staging, so ranks 0
  // and 1 start their devices first. All ranks agree whether both could: if one could not,
  // the link is timed between host buffers and rank 0 fails below with the reason.
  const kernels::Device device = o.device;
  int device_ready = 1;
  if (device != kernels::Device::cpu && rank <= 1) {
    try {
      start_device(device);
    } catch (const Error&) {
      device_ready = 0;
    }
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &device_ready, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  // Two levels: rank 0 with a rank on its host, then with one on another host (when the
  // job spans hosts), one after the other so that they do not disturb each other. The
  // device path applies to ranks 0 and 1 only (the ranks that started their devices).
  run.peers = link_peers(comm);
  const kernels::Device link_device =
      device_ready != 0 && run.peers.intra == 1 ? device : kernels::Device::cpu;
  run.link = measure_link(comm, int64_t{64} << 20, run.peers.intra, link_device);
  if (run.peers.inter >= 0) {
    run.inter_node = measure_link(comm, int64_t{64} << 20, run.peers.inter);
  }
  // What taking a message costs the receiver itself, by the profile's clock (host memory
  // only: on a GPU the staging copies are part of the link's curve).
  if (link_device == kernels::Device::cpu) {
    run.receive_cpu =
        measure_receive_cpu(comm, run.peers.intra, ping_pong_sizes(int64_t{16} << 20), o.cpu_clock);
  }
  quiet_barrier(comm);  // the other ranks wait off the cores during the ping-pongs
  const NodeLocal local = node_local(comm);
  run.threads = o.threads > 0 ? o.threads : std::max(1, kernels::cpu_threads() / local.size);
  // The graph through the runtime's own units, to calibrate the cost model; the same units
  // on several ranks of rank 0's host at once measure how they slow each other down.
  const RuntimeUnitOptions unit_options{
      .model = o.model,
      .graph_file = o.graph_file,
      .options = o.options,
      .warmup = std::max(1, o.warmup),
      .steps = o.repeats,
      .seed = o.seed,
      .device = device,
      .threads = run.threads,
      .cost_device = o.fallback_link_name.empty() ? std::string("cpu-core") : o.fallback_link_name};
  std::exception_ptr failure;
  std::string output;
  if (rank == 0) {
    try {
      kernels::set_cpu_threads(run.threads);
      start_device(device);
      run.profile.device_name = device == kernels::Device::cpu
                                    ? cpu_device_name(run.threads)
                                    : device_description(device, run.threads);
      run.profile.batch_size = graph.batch_size();
      run.profile.graph_parameter_count = graph.total_parameter_count();
      run.profile.graph_forward_flops = graph.total_forward_flops();
      if (run.link.measured) {
        run.profile.link = run.link.link;
        run.profile.link.receive_cpu = run.receive_cpu;
        run.link_source = "ping-pong";
      } else {
        run.profile.link = o.fallback_link;
        run.link_source = "device preset " + o.fallback_link_name;
      }
      if (run.inter_node.measured) {
        run.profile.link.devices_per_node = run.peers.devices_per_node;
        run.profile.link.inter_node_latency_s = run.inter_node.link.latency_s;
        run.profile.link.inter_node_bandwidth_bytes_per_s =
            run.inter_node.link.bandwidth_bytes_per_s;
        run.profile.link.inter_node_curve = run.inter_node.link.curve;
      } else {
        run.profile.link.devices_per_node = 0;  // one host: the preset's nodes do not apply
      }
      const NodeTimingOptions node_timing{
          .warmup = o.warmup,
          .repeats = o.repeats,
          .seed = o.seed,
          .device = device,
          .cpu_time = o.cpu_clock,
          .estimate_bandwidth_bytes_per_s = o.memory_bandwidth_bytes_per_s};
      run.profile.nodes = time_nodes(graph, node_timing);
      // The heads local and interlocking strategies add at stage boundaries, at every width
      // a run may choose (--aux-head), with the model's width multiplier.
      run.profile.aux_heads = time_aux_heads(graph, o.options.width_multiplier, node_timing);
      // The runtime's units on one rank, by the same clock as the nodes (the runtime
      // records both); a CPU-time profile has no host sharing (docs/simulator.md).
      double nodes_s = 0.0;  // the step by the per-node times: how many steps make ~1 s
      for (const placement::NodeTiming& n : run.profile.nodes) {
        nodes_s += n.forward_s + n.backward_s;
      }
      if (!trainable) throw NoCalibration{};
      RuntimeUnitOptions calibration = unit_options;
      calibration.steps = runtime_unit_steps(nodes_s, o.repeats);
      calibration.cpu_time = o.cpu_clock;
      // The nodes inside those steps (on a GPU the runtime does not wait for each node's
      // kernels, so there only the units calibrate).
      calibration.node_times = device == kernels::Device::cpu;
      const RuntimeUnits units = time_runtime_units(calibration);
      run.profile.runtime_forward_s = units.forward_s;
      run.profile.runtime_backward_s = units.backward_s;
      run.profile.runtime_optimizer_s = units.optimizer_s;
      run.profile.runtime_overhead_s = units.overhead_s;
      if (calibration.node_times) {
        for (placement::NodeTiming& timing : run.profile.nodes) {
          const auto id = static_cast<size_t>(graph.id_of(timing.name));
          timing.runtime_forward_s = units.node_forward_s.at(id);
          timing.runtime_backward_s = units.node_backward_s.at(id);
        }
      }
      // The same units with more micro-batches in flight, per micro-batch: what a pass
      // costs as the kept activations grow (docs/simulator.md, "Working set"). About a
      // second of steps each.
      for (const int in_flight : kInFlightMicroBatches) {
        RuntimeUnitOptions pipelined = calibration;
        pipelined.micro_batches = in_flight;
        pipelined.node_times = false;
        pipelined.steps = runtime_unit_steps(in_flight * nodes_s, o.repeats);
        const RuntimeUnits step = time_runtime_units(pipelined);
        run.profile.runtime_in_flight[in_flight] = {step.forward_s / in_flight,
                                                    step.backward_s / in_flight};
      }
    } catch (const NoCalibration&) {
      // the nodes are timed (the opaque ones estimated); nothing else can run
    } catch (...) {
      failure = std::current_exception();
    }
  }
  quiet_barrier(comm);  // the other ranks wait without taking the cores
  // CPU time does not see the time slices ranks sharing a core take from each other.
  measure_sharing_on_rank0_host(run, unit_options, failure != nullptr || o.cpu_clock || !trainable,
                                comm);
  if (failure) std::rethrow_exception(failure);
  return run;
}

}  // namespace interplace::runs
