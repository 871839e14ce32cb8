// Result files (docs/results-format.md): creating them, adding one finished configuration
// at a time so that a killed job leaves a complete file, reading back what they hold, and
// merging shard files. Only rank 0 of a job calls the writing functions.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "interplace/runs/sweep_spec.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

// Shard i of n of a sweep (sweep --shard i/n; the file's `shard` attribute).
struct Shard {
  int index = 0;
  int count = 1;
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
  bool takes(int64_t config_index) const { return config_index % count == index; }
};
// "i/n" with 0 <= i < n; throws invalid_input otherwise.
Shard parse_shard(const std::string& text);

// The root attributes (docs/results-format.md, "Root attributes").
struct Provenance {
  std::string created_utc;
  std::string interplace_version;
  std::string git_commit;
  std::string mpi_version;
  std::string hdf5_version;
  std::string onednn_version;
  std::string cuda_runtime_version = "none";
  std::string cuda_driver_version = "none";
  std::string cudnn_version = "none";
  std::vector<std::string> hosts;    // per rank, in rank order
  std::vector<std::string> devices;  // per rank, in rank order
  // Per rank, in rank order: its rank among the ranks of its node (MPI_COMM_TYPE_SHARED),
  // which picks its GPU; on a multi-node job it restarts at 0 on each node.
  std::vector<int64_t> node_local_ranks;
  int64_t world_size = 1;
  std::string slurm_job_id;
  std::string slurm_array_job_id;
  std::string slurm_array_task_id;
  std::string shard = "0/1";
  std::string spec_path;
  std::string spec_text;
  std::string overrides;  // the spec's key=value overrides, one per line ("" when none)
  std::string filter;     // sweep --filter ("" when none)
};

// Collective over `world`: host and device names of every rank, library versions,
// Slurm ids from the environment. The result is complete on rank 0.
Provenance collect_provenance(MPI_Comm world, const std::string& shard, const SweepSpec& spec,
                              const std::string& filter = "");
// The spec's overrides as the `overrides` attribute stores them: one per line.
std::string overrides_text(const SweepSpec& spec);

std::string utc_now();  // ISO 8601, seconds: "2026-11-29T19:30:00Z"

// One finished configuration, as the sweep driver hands it to the writer.
struct ConfigRecord {
  SweepConfig config;
  std::string status;  // ok | failed | skipped | diverged
  std::string reason;
  std::string started_utc;
  double wall_s = 0.0;
  const TrainPlan* plan = nullptr;      // when planning succeeded
  const TrainResult* result = nullptr;  // when status == ok
  std::string profile_id;               // the /profiles group it was predicted from, or ""
  // A simulate-only configuration skipped because its order gives the node sequence of
  // this earlier order of the spec (same_sequence.hpp), or "".
  std::string same_sequence_as = {};
};

// A profile the job measured for itself (cost_device = "profile:auto", auto_profile.hpp),
// kept as /profiles/<name> so that --resume reuses it and a reader sees what every
// prediction of the file was computed from (docs/results-format.md).
struct StoredProfile {
  std::string name;  // "<key id>-<shard index>": unique across a merge's inputs
  std::string key;   // AutoProfileKey::text
  std::string text;  // the profile file (docs/profile-format.md)
  std::string measured_utc;
  double measure_s = 0.0;  // what measuring it took
};
// Adds /profiles/<name> as append_config adds a configuration (crash-safe, one write).
void append_profile(const std::string& path, const StoredProfile& profile);
// The file's profiles; none in files without /profiles.
std::vector<StoredProfile> read_profiles(const std::string& path);

// Creates `path` with the root attributes and an empty /configs; throws invalid_input when
// it exists already (results are never overwritten).
void create_results_file(const std::string& path, const Provenance& provenance);
// Adds /configs/<id>, crash-safe (docs/results-format.md, "Appends and the journal"): to
// a small file, by rewriting it whole (a copy in memory, then `path.tmp`, fsync, rename,
// with the group's summary row); to a large one, as one entry of the journal
// `path.journal/` (a small file of its own, written the same way), folded into `path`
// when the journal reaches a fixed fraction of it, so that an append's cost does not grow
// with the file. Throws invalid_input when the id is present already. Returns the seconds
// taken.
double append_config(const std::string& path, const ConfigRecord& record);
// Several at once, in one write (crash-safe as append_config: all or none of them). For
// writers that hold many finished configurations (bench/results_scale_gen).
double append_configs(const std::string& path, std::span<const ConfigRecord> records);

// When appends go to the journal: once `path` is `journal_from_bytes` large, and the
// journal is folded once its entries hold `fold_fraction` of the file's bytes (so the
// bytes copied by folds stay proportional to the bytes appended). The defaults (16 MiB,
// 0.25) can be changed for tests and benchmarks, and by the environment variables
// INTERPLACE_JOURNAL_FROM_BYTES and INTERPLACE_JOURNAL_FOLD_FRACTION (> 0).
struct AppendPolicy {
  uint64_t journal_from_bytes = uint64_t{16} << 20;
  double fold_fraction = 0.25;
};
AppendPolicy append_policy();
void set_append_policy(const AppendPolicy& policy);
// The journal's entries of `path` (`path.journal/<seq>.h5`), in the order written; empty
// when it has none.
std::vector<std::string> journal_entries(const std::string& path);
// Folds the journal of `path` into it: one rewrite of `path` (crash-safe as a small
// append) holding every configuration of the entries, then the entries removed. Returns
// the configurations added. A fold killed midway leaves entries that the next fold skips.
int64_t fold_journal(const std::string& path);
// Bytes written to result files and journal entries by this process (for tests that an
// append to a large file does not copy it).
uint64_t results_bytes_written();

// What `inspect`, `--resume` and `merge` need from a file.
struct StoredConfig {
  std::string id;
  int64_t index = 0;
  std::string name;
  std::string status;
  std::string reason;
  double median_step_s = 0.0;  // over measured steps; NaN when there are none
  double samples_per_s = 0.0;  // NaN unless ok
  double final_loss = 0.0;     // loss of the last measured step; NaN when there is none
  double eval_accuracy = 0.0;  // NaN unless evaluated
  // The simulator's step for the configuration (prediction/step_time_s); NaN unless planned.
  // The result of a simulate-only configuration, which has no measured steps.
  double simulated_step_s = 0.0;
};

struct ResultsSummary {
  std::string format_name;
  int64_t format_version = 0;
  std::string shard;
  std::string spec_path;
  std::string spec_text;
  std::string overrides;  // "" in files written before overrides existed
  std::string filter;
  std::vector<StoredConfig> configs;  // by index, then id
};

// Throws invalid_input for a missing file, a file that is not HDF5 or not a result file
// of a version this interplace reads (1 to kResultsFormatVersion); runtime for a damaged one.
ResultsSummary read_results_file(const std::string& path);

// Combines result files into `output` (which must not exist): the root attributes of the
// first input with shard = "merged" and merged_sources = the inputs. Throws invalid_input
// for an input that is not a result file, differing format versions (the output must have
// one layout; a file of an older version is merged only with files of its version), a
// configuration id
// present in more than one input, or inputs made from different sweeps (spec text,
// overrides or filter) unless `allow_different_specs`, which the output then records
// (root attribute merged_different_specs = 1) because its spec attributes describe only
// the first input.
void merge_results_files(const std::vector<std::string>& inputs, const std::string& output,
                         bool allow_different_specs = false);

}  // namespace interplace::runs
