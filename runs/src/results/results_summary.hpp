// The summary table of a result file (docs/results-format.md, "/summary"): one row per
// configuration group, so that a reader of many configurations reads one table instead of
// opening one group per configuration. Every row is computed from the group itself
// (summarize_config), by the writer right after it wrote the group, by merge after it
// copied the groups, and for a file from before the table, from all its groups at once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hdf5_io.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

// The per-rank datasets (ranks/*, kRankStepFields) whose medians over measured steps the
// table holds, in the analysis' order (h5file.RANK_DATASETS).
inline constexpr std::array<const char*, kRankStepFieldCount> kSummaryRankColumns = [] {
  std::array<const char*, kRankStepFieldCount> names{};
  for (size_t i = 0; i < kRankStepFieldCount; ++i) names[i] = kRankStepFields[i].name;
  return names;
}();

struct SummaryRow {
  // Key fields, as the group's attributes ("" or -1 where the group lacks one).
  std::string id, name, status, reason, model, family, order, placer, strategy, pipeline,
      interlock_mode;
  int64_t index = -1, devices = -1, micro_batches = -1, batch_size = -1, seed = -1, repeat = 0;
  double wall_s = 0.0, samples_per_s = 0.0, eval_accuracy = 0.0;
  // Over the measured steps (steps/warmup == 0), as the analysis' configs table defines
  // them (docs/analysis.md): NaN (or 0 steps, final_step -1) without steps.
  int64_t measured_steps = 0;
  double step_time_s = 0.0;
  std::array<double, kSummaryRankColumns.size()> rank_medians{};
  double utilisation = 0.0, idle_fraction = 0.0;
  int64_t final_step = -1;
  double final_loss = 0.0, final_accuracy = 0.0;
  int64_t has_timeline = 0;
  double pred_step_time_s = 0.0, pred_idle_fraction = 0.0;
  // Every attribute of the group, and of its `graph` and `prediction` subgroups (as
  // nested objects of those names), as one JSON object.
  std::string attributes;
};

// The row of /configs/<id> of `configs`, read back from the group.
SummaryRow summarize_config(hid_t configs, const std::string& id);

// Creates an empty /summary in `file` (the columns, each an extendable dataset).
void create_summary(hid_t file);
// Appends rows to /summary (creating it when absent): each column grows by rows.size(),
// a cost that does not grow with the rows already there (chunked datasets).
void append_summary(hid_t file, const std::vector<SummaryRow>& rows);
// Rows in /summary; -1 when the file has none.
int64_t summary_rows(hid_t file);
// Makes /summary describe every group of /configs: a file without it (written before the
// table existed, or by an older interplace) gets one built from all its groups.
void ensure_summary(hid_t file);

// Copies into `configs` every configuration of the journal `entries` (journal_entries) that
// `configs` does not hold yet (one met again is one a killed fold left behind), and appends
// each copied group's row to `rows`: what a fold and a merge of a journaled file share.
void copy_journal_configs(const std::vector<std::string>& entries, hid_t configs,
                          std::vector<SummaryRow>& rows);

}  // namespace interplace::runs
