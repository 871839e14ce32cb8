// train(plan, comm): the training loop of one configuration on the ranks of `comm`, its
// records, the evaluation, and the gathering of everything to rank 0 (training.hpp).

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>

#include "interplace/kernels/backend.hpp"
#include "interplace/kernels/failure.hpp"
#ifdef INTERPLACE_HAVE_CUDA
#include "interplace/kernels/cuda.hpp"
#endif
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/training.hpp"
#include "runtime/instant.hpp"
#include "runtime/messenger.hpp"
#include "runtime/plan_support.hpp"
#include "runtime/rank_model.hpp"
#include "runtime/rank_program.hpp"
#include "runtime/record_gather.hpp"
#include "runtime/step_stream.hpp"
#include "runtime/torch_runtime.hpp"

namespace interplace::runs {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Peak memory on the CPU is the process's resident set high-water mark (VmHWM), reset
// before each step through /proc/self/clear_refs, so it covers tensors, buffers and MPI
// alike; on a GPU it is the device memory tensors held at most (the caching allocator's
// peak), which is what limits a configuration there.
void reset_peak_memory(kernels::Device device) {
#ifdef INTERPLACE_HAVE_CUDA
  if (device == kernels::Device::cuda) {
    kernels::reset_cuda_peak_memory();
    return;
  }
#endif
  (void)device;
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}
int64_t peak_memory_bytes(kernels::Device device) {
#ifdef INTERPLACE_HAVE_CUDA
  if (device == kernels::Device::cuda) return kernels::cuda_memory_stats().peak_allocated_bytes;
#endif
  (void)device;
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

// Test hook for failure propagation: INTERPLACE_FAIL_AT="rank:step" makes that rank fail
// in that step, as a kernel or data error would.
void maybe_fail(int rank, int step) {
  const char* spec = std::getenv("INTERPLACE_FAIL_AT");
  if (!spec) return;
  int r = -1, s = -1;
  if (std::sscanf(spec, "%d:%d", &r, &s) == 2 && r == rank && s == step) {
    throw_runtime("injected failure on rank " + std::to_string(rank) + " in step " +
                  std::to_string(step) + " (INTERPLACE_FAIL_AT)");
  }
}

}  // namespace

int rank_threads(const TrainConfig& c, MPI_Comm comm) {
  // Checked again here, not only in planning: the plan may come from another node.
  check_thread_count("threads_per_rank", c.threads_per_rank);
  if (c.threads_per_rank > 0) return c.threads_per_rank;
  // The cores this process may run on (Slurm and taskset restrict them), not the machine's.
  const int cores = usable_cpu_cores();
  // Ranks on this node usually have disjoint or equal CPU sets: share equal ones.
  return std::max(1, cores / node_local(comm).size);
}

namespace {

// A NaN or infinite loss (a learning rate of 1e308) ends the configuration as diverged:
// recorded with its own status rather than "ok" with NaN losses. The ranks
// holding a loss (the head's, the aux heads') check; the others learn it by abort.
void check_finite_loss(const RankModel& model, int rank, int step, double learning_rate) {
  for (const auto* tally : {&model.loss, &model.aux_loss}) {
    if (tally->micro_batches > 0 && !std::isfinite(tally->mean_loss())) {
      std::ostringstream lr;
      lr << learning_rate;
      throw Diverged("rank " + std::to_string(rank) + ": diverged: the " +
                     (tally == &model.loss ? "" : "auxiliary ") + "loss of step " +
                     std::to_string(step) + " is " + std::to_string(tally->mean_loss()) +
                     " (learning rate " + lr.str() +
                     "). HINT: a smaller learning rate, or more warm-up");
    }
  }
}

enum class Split { test, validation };

// The first `chunks` micro-batch sized chunks of a split (the graph's shapes are
// per micro-batch) through the network's own head in eval mode (the forward actions of
// micro-batch 0, forward_only_actions); collective. Training mode
// is restored after it. The tally is the sink's rank's (empty elsewhere).
LossTally evaluate(RankModel& model, const std::vector<placement::Action>& eval_actions,
                   Dataset& data, Split split, int64_t chunk, int64_t chunks, Messenger& msg) {
  model.set_training(false);
  LossTally eval;
  for (int64_t i = 0; i < chunks; ++i) {
    model.set_batch(split == Split::test ? data.test_batch(i * chunk, chunk)
                                         : data.validation_batch(i * chunk, chunk),
                    1);
    for (const placement::Action& action : eval_actions) model.execute(action);
    eval.loss_sum += model.loss.loss_sum;
    eval.correct += model.loss.correct;
    eval.rows += model.loss.rows;
    eval.micro_batches += model.loss.micro_batches;
    model.end_step();
  }
  msg.complete_sends();
  msg.barrier();
  model.set_training(true);
  return eval;
}

// The steps after which the test split is evaluated (eval_epochs), with their epoch.
std::vector<std::pair<int, double>> evaluation_steps(const TrainConfig& c, const Dataset& data) {
  std::vector<std::pair<int, double>> at;
  if (c.eval_epochs.empty()) return at;
  const int64_t per_epoch = config_steps_per_epoch(c);
  // The plan counted epochs in the data set's nominal size: the files must agree.
  if (per_epoch != steps_per_epoch(data.train_size(), c.batch_size)) {
    throw_invalid("data set " + to_string(c.dataset) + " holds " +
                  std::to_string(data.train_size()) +
                  " training samples, but its epochs were counted as " + std::to_string(per_epoch) +
                  " batches of " + std::to_string(c.batch_size));
  }
  for (const double e : c.eval_epochs) {
    at.emplace_back(static_cast<int>(last_step_of_epoch(e, per_epoch)), e);
  }
  return at;
}

// Rank 0 gets every evaluation's tally summed over ranks (only the sink's rank has one).
void reduce_evaluations(std::vector<LossTally>& tallies, MPI_Comm comm, int rank) {
  std::vector<double> mine, sum(tallies.size() * 4, 0.0);
  for (const LossTally& t : tallies) {
    mine.insert(mine.end(), {t.loss_sum, t.correct, t.rows, static_cast<double>(t.micro_batches)});
  }
  check_mpi(MPI_Reduce(mine.data(), sum.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM,
                       0, comm),
            "MPI_Reduce");
  if (rank != 0) return;
  for (size_t i = 0; i < tallies.size(); ++i) {
    tallies[i] =
        LossTally{sum[4 * i], sum[4 * i + 1], sum[4 * i + 2], static_cast<int>(sum[4 * i + 3])};
  }
}

// Executes one step's actions. The receives of the next `window` receive actions are
// posted ahead (window: one mini-batch's worth, M), so that a message can land while the
// rank still computes the actions before its receive; a rank that posts a receive only
// when it reaches it leaves a large message waiting for the rendezvous until then, a
// wait the simulator's transfers do not have.
void run_program(const RankProgram& program, RankModel& model, int window) {
  const std::vector<placement::Action>& actions = program.actions;
  std::vector<char> posted(actions.size(), 0);
  size_t scan = 0;
  int outstanding = 0;
  for (size_t i = 0; i < actions.size(); ++i) {
    for (scan = std::max(scan, i); scan < actions.size() && outstanding < window; ++scan) {
      if (model.post_receives(actions[scan])) {
        posted[scan] = 1;
        ++outstanding;
      }
    }
    model.execute(actions[i]);
    if (static_cast<int>(i) == program.gradients_final_after && program.optimizer_step_at >= 0) {
      model.start_gradient_allreduce(actions[static_cast<size_t>(program.optimizer_step_at)]);
    }
    if (posted[i]) --outstanding;
    for (const auto& [m, chunk] : program.release_chunk[i]) model.release_chunk(m, chunk);
    for (int m : program.release[i]) model.release(m);
  }
}

TrainResult run(const TrainPlan& plan, Messenger& msg, MPI_Comm comm, const StepCallback& on_step) {
  const TrainConfig& c = plan.config;
  const int rank = msg.world_rank();  // replica * K + stage
  const int threads = rank_threads(c, comm);
  kernels::set_cpu_threads(threads);
  const kernels::Device device = plan.device;
  RankClock clock;
  msg.watchdog_s = c.watchdog_s;
  msg.on_wait = [&clock](const Instant& start, const Instant& end) { clock.waited(start, end); };
  const RankProgram program = rank_program(plan, msg.rank());  // the stage's
  RankModel model(plan, program.has_aux_head, msg, clock);
  // Every rank draws the same batches (datasets.hpp); a bad data directory fails here.
  // Augmentation (training batches only) is checked by the plan, again here: the plan may
  // come from another node.
  check_augmentation(c.augmentation, sample_shape(plan.graph));
  const std::unique_ptr<Dataset> data = with_augmentation(
      with_train_subset(with_validation_split(open_dataset(to_string(c.dataset), c.data_dir,
                                                           sample_shape(plan.graph), c.seed),
                                              c.validation_fraction, c.seed),
                        c.train_samples, c.seed),
      c.augmentation, c.seed);

  const std::vector<std::pair<int, double>> evaluate_after = evaluation_steps(c, *data);
  const std::vector<placement::Action> eval_actions = forward_only_actions(program);
  std::vector<LossTally> evaluations;             // of the test split, per evaluate_after
  std::vector<LossTally> validation_evaluations;  // of the validation split (if held out)
  const int64_t eval_chunk = c.replica_batch_size() / c.micro_batches;  // the graph's
  // eval_epoch_samples (0: all) of a split, in whole micro-batch chunks.
  const auto epoch_chunks = [&](int64_t split_size) {
    return (c.eval_epoch_samples > 0 ? std::min(c.eval_epoch_samples, split_size) : split_size) /
           eval_chunk;
  };
  const int64_t eval_epoch_chunks = epoch_chunks(data->test_size());
  const int64_t validation_chunks = epoch_chunks(data->validation_size());
  if (!evaluate_after.empty() && eval_epoch_chunks < 1) {
    throw_invalid("eval_epoch_samples " + std::to_string(c.eval_epoch_samples) +
                  " is less than one micro-batch of " + std::to_string(eval_chunk) +
                  " test samples");
  }
  if (!evaluate_after.empty() && data->validation_size() > 0 && validation_chunks < 1) {
    throw_invalid("the validation split's " + std::to_string(data->validation_size()) +
                  " samples are less than one micro-batch of " + std::to_string(eval_chunk) +
                  ". HINT: a larger validation_fraction");
  }
  double evaluation_s = 0.0;  // in measured steps: kept out of the measured time

  LocalRecords local;
  local.stages_with_head = program.stages_with_head;
  const int total = c.warmup_steps + c.steps;
  double measured_start = 0.0;
  double previous_end = 0.0;
  double previous_end_cpu = 0.0;  // this thread's CPU time at previous_end
  StepStream stream(plan, msg, on_step);
  std::vector<NodeStepTimes> node_times;
  // What earlier runs of this process freed goes back to the system: this run's peak
  // memory (VmHWM) is then its own, though freed tensors stay for reuse within the run.
  kernels::release_free_host_memory();
  const double train_start = wall_s();
  try {
    for (int step = 0; step < total; ++step) {
      if (step == c.warmup_steps) {
        msg.barrier();
        measured_start = wall_s();
        previous_end = measured_start;
        previous_end_cpu = thread_cpu_s();
      }
      if (step == 0) {
        previous_end = wall_s();
        previous_end_cpu = thread_cpu_s();
      }
      clock = RankClock{};
      clock.record_events = step == total - 1;
      clock.step_start_s = previous_end;
      const double wait_before = msg.comm_wait_s;
      const int64_t bytes_before = msg.bytes_sent;
      reset_peak_memory(device);
      maybe_fail(rank, step);
      // The global mini-batch; this replica trains its slice of it.
      model.set_batch(data->train_batch(step, c.batch_size), c.micro_batches, msg.replica(),
                      msg.replicas());
      const double learning_rate = config_learning_rate(c, step);
      model.set_learning_rate(learning_rate);
      run_program(program, model, c.micro_batches);
      check_finite_loss(model, rank, step, learning_rate);
      msg.reap_sends();
      const Instant end_at = now();
      const double end = end_at.wall_s;
      RankStepRecord r;
      r.step_s = end - previous_end;
      r.step_cpu_s = end_at.cpu_s - previous_end_cpu;
      r.forward_cpu_s = clock.forward_cpu_s;
      r.backward_cpu_s = clock.backward_cpu_s;
      r.aux_cpu_s = clock.aux_cpu_s;
      r.optimizer_cpu_s = clock.optimizer_cpu_s;
      r.forward_s = clock.forward_s;
      r.backward_s = clock.backward_s;
      r.aux_s = clock.aux_s;
      r.optimizer_s = clock.optimizer_s;
      r.comm_wait_s = msg.comm_wait_s - wait_before;
      r.idle_s = r.step_s - (r.forward_s + r.backward_s + r.aux_s + r.optimizer_s);
      r.overhead_s = r.idle_s - r.comm_wait_s;
      r.bytes_sent = msg.bytes_sent - bytes_before;
      r.peak_memory_bytes = peak_memory_bytes(device);
      local.ranks.push_back(r);
      local.loss.push_back(model.loss.mean_loss());
      local.accuracy.push_back(model.loss.accuracy());
      local.aux_loss.push_back(model.aux_loss.mean_loss());
      local.aux_accuracy.push_back(model.aux_loss.accuracy());
      if (step == total - 1) local.timeline = clock.events;
      // Rank 0's handing on (printing) falls into its next step, as overhead.
      stream.post(step, pack_step(local, local.ranks.size() - 1));
      // Per-node times (the profile's calibration run): every step taken, measured kept.
      if (plan.record_node_times) {
        NodeStepTimes times = model.take_node_times();
        if (step >= c.warmup_steps) node_times.push_back(std::move(times));
      }
      model.end_step();
      previous_end = end;
      previous_end_cpu = end_at.cpu_s;
      for (const auto& [after, epoch] : evaluate_after) {
        if (after != step) continue;
        const double start = wall_s();
        evaluations.push_back(
            evaluate(model, eval_actions, *data, Split::test, eval_chunk, eval_epoch_chunks, msg));
        if (validation_chunks > 0) {
          validation_evaluations.push_back(evaluate(model, eval_actions, *data, Split::validation,
                                                    eval_chunk, validation_chunks, msg));
        }
        previous_end = wall_s();  // nor in the next step's time
        previous_end_cpu = thread_cpu_s();
        if (step >= c.warmup_steps) evaluation_s += previous_end - start;
      }
      // Every rank checks its own clock; the first to pass the limit fails and the others
      // follow within the failure propagation's delay (docs/runtime.md).
      if (c.time_limit_s > 0.0 && end - train_start > c.time_limit_s && step + 1 < total) {
        throw_runtime("rank " + std::to_string(rank) + ": the configuration ran past its time " +
                      "limit of " + std::to_string(static_cast<int64_t>(c.time_limit_s)) +
                      " s after step " + std::to_string(step) + " of " + std::to_string(total) +
                      ". HINT: raise --time-limit-s (sweep spec: time_limit_s) or run fewer "
                      "steps");
      }
    }
    msg.complete_sends();
    msg.barrier();
  } catch (...) {
    stream.drain();  // rank 0 hands on the steps every rank finished
    throw;
  }
  const double measured_wall_s = wall_s() - measured_start - evaluation_s;
  stream.finish(total);

  // Evaluation at the end: eval_samples of the test split.
  const int64_t chunk = c.replica_batch_size() / c.micro_batches;
  const int64_t chunks = std::min(c.eval_samples, data->test_size()) / chunk;
  const LossTally eval = evaluate(model, eval_actions, *data, Split::test, chunk, chunks, msg);

  local.eval_loss = chunks > 0 ? eval.mean_loss() : kNaN;
  local.eval_accuracy = chunks > 0 ? eval.accuracy() : kNaN;
  local.device_name = device_description(device, threads);
  TrainResult result = gather_records(local, plan, msg);
  result.measured_wall_s = measured_wall_s;
  result.samples_per_s =
      measured_wall_s > 0.0 ? static_cast<double>(c.steps * c.batch_size) / measured_wall_s : 0.0;
  result.eval_samples = chunks * chunk;
  result.executed_actions = model.executed();
  result.node_times = std::move(node_times);
  // Every replica evaluated the same samples with the same weights: replica 0's count.
  if (msg.replica() != 0) {
    evaluations.assign(evaluations.size(), LossTally{});
    validation_evaluations.assign(validation_evaluations.size(), LossTally{});
  }
  reduce_evaluations(evaluations, msg.comm(), rank);
  reduce_evaluations(validation_evaluations, msg.comm(), rank);
  for (size_t i = 0; i < evaluations.size() && rank == 0; ++i) {
    const LossTally& t = evaluations[i];
    Evaluation e{.epoch = evaluate_after[i].second,
                 .step = evaluate_after[i].first,
                 .loss = t.mean_loss(),
                 .accuracy = t.accuracy(),
                 .samples = eval_epoch_chunks * eval_chunk};
    if (i < validation_evaluations.size()) {
      e.validation_loss = validation_evaluations[i].mean_loss();
      e.validation_accuracy = validation_evaluations[i].accuracy();
      e.validation_samples = validation_chunks * eval_chunk;
    }
    result.evaluations.push_back(e);
  }
  return result;
}

}  // namespace

TrainResult train(const TrainPlan& plan, MPI_Comm comm, const StepCallback& on_step) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (size != plan.config.ranks()) {
    throw_invalid("the configuration needs " + std::to_string(plan.config.ranks()) +
                  " ranks (devices" +
                  (plan.config.data_parallel > 1
                       ? " x " + std::to_string(plan.config.data_parallel) + " replicas"
                       : std::string()) +
                  "), the communicator has " + std::to_string(size));
  }
  if (plan.config.runtime == RuntimeKind::torch) return train_torch(plan, comm, on_step);
  const kernels::Device device = plan.device;
  Messenger msg(comm, device, plan.config.devices);
  try {
    start_device(device);
    return run(plan, msg, comm, on_step);
  } catch (const RemoteAbort&) {
    throw;
  } catch (const Diverged& e) {
    if (e.remote()) throw;  // learnt from another rank: already announced
    msg.abort(e);
    throw;
  } catch (...) {
    // The classification the CLI and the sweep use (failure.hpp): bad_alloc becomes
    // "out of memory", anything unexpected an internal error.
    const Failure failure = classify_failure(std::current_exception(), false);
    const Error error(failure.exit_code == 2 ? ErrorKind::invalid_input : ErrorKind::runtime,
                      "rank " + std::to_string(msg.world_rank()) + ": " + failure.message);
    msg.abort(error);
    throw error;
  }
}

}  // namespace interplace::runs
