// Profiles a job measures for itself: a configuration with profile_path "auto" (sweep:
// cost_device = "profile:auto"; train: --profile auto) is planned and predicted from a
// profile measured on the job's own ranks before its first such configuration, once per
// distinct AutoProfileKey, so that every prediction of a sweep is calibrated to the
// machine it ran on (docs/profile-format.md, "Profiles a job measures").
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "interplace/placement/profile.hpp"
#include "interplace/runs/profiling.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {

// What a measured profile depends on: the model and its options at the micro-batch (the
// graph whose nodes it times), the CPU threads of the configuration's ranks, the device and
// the runtime that times them (a line only for runtime torch: native keys stay as they were).
// `text` is one key=value line each; `id` its FNV-1a 64 in 16 hex digits.
struct AutoProfileKey {
  std::string text;
  std::string id;
};

// The threads the configuration's rank 0 will run with (train's threads_for): its
// threads_per_rank, else this process's usable cores over the configuration's ranks on
// world rank 0's host (min(K, ranks there), as MPI places ranks consecutively).
int auto_profile_threads(const TrainConfig& config);
AutoProfileKey auto_profile_key(const TrainConfig& config, int threads);
// interplace profile's defaults (5 repeats after 2 warm-up runs, wall clock), at the
// configuration's micro-batch, seed and device; the link of its cost_device preset where
// rank 0 has no second rank on its host.
ProfileRequest auto_profile_request(const TrainConfig& config, int threads);

// Collective over `comm`: the configuration's profile measured on this job's ranks, as
// profile file text on rank 0 ("" on the others): interplace's own kernels
// (measure_profile) for runtime native, the PyTorch runtime's own node times
// (interplace_importers.torch_profile) for runtime torch. `comment` heads the native text.
std::string measure_auto_profile(const TrainConfig& config, int threads, MPI_Comm comm,
                                 const std::string& comment);
// The profile file text (docs/profile-format.md) of a measurement, after `comment` lines.
std::string profile_file_text(const MeasuredProfile& measured, const std::string& comment);
// Parses a profile file text; throws invalid_input naming `source`.
std::shared_ptr<const placement::Profile> parse_profile_text(const std::string& text,
                                                             const std::string& source);

// Collective over `comm`: rank 0's string on every rank.
std::string broadcast_text(const std::string& text, MPI_Comm comm);

// Collective over `comm`: runs `measure` on every rank (a collective measurement whose
// profile file text counts on rank 0), then shares rank 0's text, or its failure, with
// every rank: each returns the same text and profile, or throws the same runtime error.
struct AgreedProfile {
  std::string text;
  std::shared_ptr<const placement::Profile> profile;
};
AgreedProfile measure_on_every_rank(const std::function<std::string()>& measure, MPI_Comm comm);

}  // namespace interplace::runs
