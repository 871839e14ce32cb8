// Synthetic result files of many configurations, written through the real writer
// (create_results_file, append_configs: the groups and the summary table a sweep writes),
// for bench/results-scale, which times inspect, report, compare, export and merge on them.
//
//   results_scale_gen --configs 10000 --shards 8 --out DIR/r
//     writes DIR/r-0.h5 ... DIR/r-7.h5, shard i holding configurations i, i+8, ... (as
//     `sweep --shard i/8`), every one from the same spec, so that `interplace merge` takes
//     them.
//
// Each configuration is a real plan (plan_training of resnet20 or gpt-mini on 2 devices,
// one per order x placer x strategy, reused across seeds) with synthetic training: 2
// warm-up and 8 measured steps on 2 ranks, and a 12-event timeline; 1 in 20 failed
// (no plan) and 1 in 20 skipped (a plan, no steps), as a sweep has them.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/training.hpp"

namespace {

using namespace interplace;
using namespace interplace::runs;

constexpr int kDevices = 2;
constexpr int kWarmup = 2;
constexpr int kMeasured = 8;

struct Setting {
  std::string model, order, placer, strategy;
};

std::vector<Setting> settings() {
  std::vector<Setting> out;
  for (const char* model : {"resnet20", "gpt-mini"}) {
    for (const char* order : {"topo", "dfs-post-rev"}) {
      for (const char* placer : {"stages", "round-robin"}) {
        for (const char* strategy : {"global", "local"}) {
          out.push_back({model, order, placer, strategy});
        }
      }
    }
  }
  return out;
}

TrainConfig train_config(const Setting& s, uint64_t seed) {
  TrainConfig c;
  c.model = s.model;
  c.order = s.order;
  c.placer = s.placer;
  c.strategy = s.strategy;
  c.devices = kDevices;
  c.pipeline = "gpipe";
  c.micro_batches = 2;
  c.batch_size = 8;
  c.warmup_steps = kWarmup;
  c.steps = kMeasured;
  c.dataset = "synthetic";
  c.seed = seed;
  return c;
}

// Deterministic jitter in [0, 1) from (index, step, rank).
double jitter(int64_t index, int step, int rank) {
  uint64_t h = 1469598103934665603ULL;
  for (const uint64_t v :
       {static_cast<uint64_t>(index), static_cast<uint64_t>(step), static_cast<uint64_t>(rank)}) {
    h = (h ^ v) * 1099511628211ULL;
    h ^= h >> 29;
  }
  return static_cast<double>(h % 1000003) / 1000003.0;
}

TrainResult synthetic_result(int64_t index, double base_s) {
  TrainResult r;
  for (int s = 0; s < kWarmup + kMeasured; ++s) {
    StepRecord step;
    step.step = s;
    step.warmup = s < kWarmup;
    step.loss = 2.3 / (1.0 + 0.1 * s) + 0.01 * jitter(index, s, 9);
    step.accuracy = 0.1 + 0.05 * s;
    step.learning_rate = 0.1;
    step.aux_loss = {step.loss * 1.1, NAN};
    step.aux_accuracy = {step.accuracy * 0.9, NAN};
    double slowest = 0.0;
    for (int k = 0; k < kDevices; ++k) {
      RankStepRecord q;
      q.step_s = base_s * (1.0 + 0.2 * jitter(index, s, k)) * (s < kWarmup ? 3.0 : 1.0);
      q.forward_s = 0.3 * q.step_s;
      q.backward_s = 0.45 * q.step_s;
      q.aux_s = 0.0;
      q.optimizer_s = 0.05 * q.step_s;
      q.comm_wait_s = 0.05 * q.step_s;
      q.idle_s = 0.1 * q.step_s;
      q.overhead_s = 0.05 * q.step_s;
      q.step_cpu_s = 0.9 * q.step_s;
      q.forward_cpu_s = 0.3 * q.step_s;
      q.backward_cpu_s = 0.4 * q.step_s;
      q.optimizer_cpu_s = 0.05 * q.step_s;
      q.bytes_sent = 1 << 16;
      q.peak_memory_bytes = int64_t{64} << 20;
      slowest = std::max(slowest, q.step_s);
      step.ranks.push_back(q);
    }
    step.step_time_s = slowest;
    r.steps.push_back(step);
  }
  const char* kinds[4] = {"forward", "backward", "optimizer", "comm_wait"};
  for (int e = 0; e < 12; ++e) {
    placement::TimelineEvent t;
    t.rank = e % kDevices;
    t.kind = kinds[e % 4];
    t.action = "F" + std::to_string(e / 4);
    t.micro_batch = e / 4;
    t.start_s = 0.001 * e;
    t.end_s = 0.001 * e + 0.0008;
    t.cpu_s = 0.0007;
    r.timeline.push_back(t);
  }
  r.measured_wall_s = base_s * kMeasured;
  r.samples_per_s = 8.0 / base_s;
  r.eval_loss = NAN;
  r.eval_accuracy = NAN;
  r.hosts = {"node1", "node1"};
  r.device_names = {"cpu: 1 threads", "cpu: 1 threads"};
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"synthetic result files through the real writer (bench/results-scale)"};
  int64_t configs = 1000;
  int shards = 1;
  int batch = 2000;
  std::string out;
  app.add_option("--configs", configs, "configurations in all")->check(CLI::PositiveNumber);
  app.add_option("--shards", shards, "files: shard i holds i, i+n, ...")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "configurations per append_configs call")
      ->check(CLI::PositiveNumber);
  app.add_option("--out", out, "path prefix: PREFIX-<i>.h5 per shard")->required();
  int64_t timed = 0;
  bool rewrite = false;
  app.add_option("--time-appends", timed,
                 "append the last N configurations of each file one at a time and print the "
                 "seconds and bytes written per append");
  app.add_flag("--rewrite", rewrite,
               "rewrite the whole file at every append (no journal: the writer before it)");
  CLI11_PARSE(app, argc, argv);
  if (rewrite) set_append_policy({UINT64_MAX, 0.25});
  try {
    const std::vector<Setting> all = settings();
    std::map<size_t, std::optional<TrainPlan>> plans;  // per setting; empty: planning failed
    const std::string spec_text =
        "# bench/results_scale_gen: " + std::to_string(configs) + " synthetic configurations\n";
    for (int shard = 0; shard < shards; ++shard) {
      const auto start = std::chrono::steady_clock::now();
      const std::string path = out + "-" + std::to_string(shard) + ".h5";
      Provenance p;
      p.created_utc = utc_now();
      p.interplace_version = "bench";
      p.git_commit = "unknown";
      p.hosts = {"node1", "node1"};
      p.devices = {"cpu", "cpu"};
      p.node_local_ranks = {0, 1};
      p.world_size = kDevices;
      p.shard = std::to_string(shard) + "/" + std::to_string(shards);
      p.spec_path = "bench-results-scale.toml";
      p.spec_text = spec_text;
      create_results_file(path, p);
      std::vector<ConfigRecord> pending;
      std::vector<double> times;
      std::vector<uint64_t> bytes_per_append;
      std::vector<std::unique_ptr<TrainResult>> results;  // alive until appended
      int64_t written = 0;
      const auto flush = [&] {
        append_configs(path, pending);
        written += static_cast<int64_t>(pending.size());
        pending.clear();
        results.clear();
      };
      for (int64_t i = shard; i < configs; i += shards) {
        const size_t which = static_cast<size_t>(i) % all.size();
        const uint64_t seed = static_cast<uint64_t>(i / static_cast<int64_t>(all.size())) + 1;
        SweepConfig c;
        c.train = train_config(all[which], seed);
        c.index = i;
        c.id = config_id(c.train, 0);
        if (!plans.count(which)) {
          try {
            plans[which] = plan_config(train_config(all[which], 1));
          } catch (const Error&) {
            plans[which] = std::nullopt;
          }
        }
        const std::optional<TrainPlan>& plan = plans[which];
        ConfigRecord r{c, "ok", "", utc_now(), 0.5, nullptr, nullptr, "", ""};
        if (!plan) {
          r.status = "skipped";
          r.reason = "the plan failed";
        } else if (i % 20 == 7) {
          r.status = "failed";
          r.reason = "synthetic failure";
        } else if (i % 20 == 13) {
          r.status = "skipped";
          r.reason = "synthetic skip";
          r.plan = &*plan;
        } else {
          r.plan = &*plan;
          const double base =
              plan->prediction.step_time_s > 0 ? plan->prediction.step_time_s : 0.01;
          results.push_back(std::make_unique<TrainResult>(synthetic_result(i, base)));
          r.result = results.back().get();
        }
        if (i + timed * shards >= configs) {  // one of the last `timed`: alone, timed
          if (!pending.empty()) {             // not flush(): it frees r's result
            append_configs(path, pending);
            written += static_cast<int64_t>(pending.size());
            pending.clear();
          }
          const uint64_t bytes = results_bytes_written();
          times.push_back(append_config(path, r));
          bytes_per_append.push_back(results_bytes_written() - bytes);
          ++written;
          results.clear();
          continue;
        }
        pending.push_back(r);
        if (static_cast<int>(pending.size()) >= batch) flush();
      }
      if (!pending.empty()) flush();
      fold_journal(path);  // as a sweep ends
      if (!times.empty()) {
        std::vector<double> sorted_times = times;
        std::sort(sorted_times.begin(), sorted_times.end());
        double bytes = 0;
        for (const uint64_t b : bytes_per_append) bytes += static_cast<double>(b);
        std::printf(
            "%s: %zu single appends at %lld configurations: median %.4f s, max %.4f s, "
            "mean %.0f bytes written\n",
            path.c_str(), times.size(), static_cast<long long>(written),
            sorted_times[sorted_times.size() / 2], sorted_times.back(),
            bytes / static_cast<double>(bytes_per_append.size()));
      }
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%s: %lld configurations in %.1f s\n", path.c_str(),
                  static_cast<long long>(written), s);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "results_scale_gen: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
