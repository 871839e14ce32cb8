#include "runtime/record_gather.hpp"

#include <array>
#include <cmath>
#include <cstring>

#include "interplace/runs/mpi_session.hpp"

namespace interplace::runs {
namespace {

constexpr int kNameChars = 128;
const std::array<const char*, 5> kKinds = {"forward", "backward", "aux", "optimizer", "comm_wait"};
// Per timeline event: kind, start, end, the action label's letter, micro-batch, loss stage,
// peer, CPU seconds.
constexpr int kEventFields = 8;

std::vector<double> pack_steps(const LocalRecords& l) {
  std::vector<double> out;
  for (size_t s = 0; s < l.ranks.size(); ++s) {
    const std::vector<double> step = pack_step(l, s);
    out.insert(out.end(), step.begin(), step.end());
  }
  out.push_back(l.eval_loss);
  out.push_back(l.eval_accuracy);
  return out;
}

std::vector<char> fixed(const std::string& text) {
  std::vector<char> out(kNameChars, '\0');
  std::memcpy(out.data(), text.data(), std::min<size_t>(text.size(), kNameChars - 1));
  return out;
}

double first_number(double current, double value) {
  return std::isnan(current) ? value : current;
}

}  // namespace

std::vector<double> pack_step(const LocalRecords& l, size_t s) {
  // The record's columns, then the mini-batch's loss and accuracy and the rank's auxiliary
  // head's: kStepFields numbers.
  std::vector<double> out;
  out.reserve(kStepFields);
  for (const RankStepField& field : kRankStepFields) out.push_back(field.value(l.ranks[s]));
  out.insert(out.end(), {l.loss[s], l.accuracy[s], l.aux_loss[s], l.aux_accuracy[s]});
  return out;
}

StepRecord new_step_record(int step, const TrainPlan& plan) {
  StepRecord record;
  record.step = step;
  record.warmup = step < plan.config.warmup_steps;
  record.learning_rate = config_learning_rate(plan.config, step);
  record.loss = record.accuracy = NAN;
  record.aux_loss.assign(static_cast<size_t>(plan.config.devices), NAN);
  record.aux_accuracy.assign(static_cast<size_t>(plan.config.devices), NAN);
  return record;
}

void add_rank_to_step(StepRecord& step, int stage, const double* f) {
  RankStepRecord rec;
  for (size_t i = 0; i < kRankStepFieldCount; ++i) kRankStepFields[i].set(rec, f[i]);
  const double* losses = f + kRankStepFieldCount;
  step.step_time_s = std::max(step.step_time_s, rec.step_s);
  step.ranks.push_back(rec);
  step.loss = first_number(step.loss, losses[0]);
  step.accuracy = first_number(step.accuracy, losses[1]);
  step.aux_loss[static_cast<size_t>(stage)] = losses[2];
  step.aux_accuracy[static_cast<size_t>(stage)] = losses[3];
}

TrainResult gather_records(const LocalRecords& local, const TrainPlan& plan, Messenger& msg) {
  // Every rank of every replica (world rank = replica * K + stage).
  const int size = msg.world_size(), rank = msg.world_rank();
  const int stages = msg.size();
  MPI_Comm comm = msg.comm();
  const std::vector<double> mine = pack_steps(local);
  std::vector<double> all(rank == 0 ? mine.size() * static_cast<size_t>(size) : 0);
  check_mpi(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                       static_cast<int>(mine.size()), MPI_DOUBLE, 0, comm),
            "MPI_Gather");
  std::vector<double> events;
  for (const placement::TimelineEvent& e : local.timeline) {
    double kind = 0;
    for (size_t k = 0; k < kKinds.size(); ++k)
      kind = e.kind == kKinds[k] ? static_cast<double>(k) : kind;
    // The action's label is its letter and the micro-batch ("F3"), or "S", or none.
    const double letter = e.action.empty() ? 0.0 : static_cast<double>(e.action.front());
    events.insert(events.end(),
                  {kind, e.start_s, e.end_s, letter, static_cast<double>(e.micro_batch),
                   static_cast<double>(e.loss_stage), static_cast<double>(e.peer), e.cpu_s});
  }
  int count = static_cast<int>(events.size());
  std::vector<int> counts(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm), "MPI_Gather");
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<double> all_events(rank == 0 ? static_cast<size_t>(total) : 0);
  check_mpi(MPI_Gatherv(events.data(), count, MPI_DOUBLE, all_events.data(), counts.data(),
                        offsets.data(), MPI_DOUBLE, 0, comm),
            "MPI_Gatherv");
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int host_length = 0;
  MPI_Get_processor_name(host, &host_length);
  std::vector<char> names = fixed(host), devices = fixed(local.device_name);
  std::vector<char> all_names(static_cast<size_t>(kNameChars * size)),
      all_devices(static_cast<size_t>(kNameChars * size));
  MPI_Gather(names.data(), kNameChars, MPI_CHAR, all_names.data(), kNameChars, MPI_CHAR, 0, comm);
  MPI_Gather(devices.data(), kNameChars, MPI_CHAR, all_devices.data(), kNameChars, MPI_CHAR, 0,
             comm);

  TrainResult result;
  const int steps = static_cast<int>(local.ranks.size());
  const int ranks = rank == 0 ? size : 1;
  const std::vector<double>& source = rank == 0 ? all : mine;
  const size_t stride = mine.size();
  result.eval_loss = result.eval_accuracy = NAN;
  for (int s = 0; s < steps; ++s) {
    StepRecord step = new_step_record(s, plan);
    for (int r = 0; r < ranks; ++r) {
      const double* f =
          source.data() + static_cast<size_t>(r) * stride + static_cast<size_t>(s) * kStepFields;
      add_rank_to_step(step, (rank == 0 ? r : rank) % stages, f);
    }
    result.steps.push_back(std::move(step));
  }
  for (int r = 0; r < ranks; ++r) {
    const double* tail = source.data() + static_cast<size_t>(r) * stride + stride - 2;
    result.eval_loss = first_number(result.eval_loss, tail[0]);
    result.eval_accuracy = first_number(result.eval_accuracy, tail[1]);
  }
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      const int n = counts[static_cast<size_t>(r)] / kEventFields;
      const double* rank_events = all_events.data() + offsets[static_cast<size_t>(r)];
      for (int i = 0; i < n; ++i) {
        const double* e = rank_events + static_cast<ptrdiff_t>(kEventFields) * i;
        placement::TimelineEvent event;
        event.rank = r;
        event.kind = kKinds[static_cast<size_t>(e[0])];
        event.start_s = e[1];
        event.end_s = e[2];
        event.micro_batch = static_cast<int>(e[4]);
        event.loss_stage = static_cast<int>(e[5]);
        event.peer = static_cast<int>(e[6]);
        event.cpu_s = e[7];
        if (const auto letter = static_cast<char>(e[3]); letter != 0) {
          event.action.push_back(letter);
          if (letter != 'S') event.action += std::to_string(event.micro_batch);
        }
        result.timeline.push_back(std::move(event));
      }
      result.hosts.emplace_back(all_names.data() + r * kNameChars);
      result.device_names.emplace_back(all_devices.data() + r * kNameChars);
    }
  } else {
    for (placement::TimelineEvent e : local.timeline) {
      e.rank = rank;
      result.timeline.push_back(e);
    }
    result.hosts.emplace_back(host);
    result.device_names.push_back(local.device_name);
  }
  return result;
}

}  // namespace interplace::runs
