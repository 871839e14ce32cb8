// Provenance of a result file: what ran (commit, libraries), where (hosts, devices, Slurm
// ids) and what was asked for (the spec), gathered from every rank onto rank 0.
#include <hdf5.h>

#include <charconv>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/versions.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/results_file.hpp"
#ifdef INTERPLACE_HAVE_CUDA
#include "interplace/kernels/cuda.hpp"
#endif

#ifndef INTERPLACE_GIT_COMMIT
#define INTERPLACE_GIT_COMMIT "unknown"
#endif
#ifndef INTERPLACE_VERSION
#define INTERPLACE_VERSION "unknown"
#endif

namespace interplace::runs {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Every rank's text in rank order, on rank 0 (empty on the others).
std::vector<std::string> gather_all(MPI_Comm world, const std::string& mine) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world), "MPI_Gather");
  std::vector<int> offsets(static_cast<size_t>(size), 0);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<size_t>(r)] = total;
    total += lengths[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        MPI_CHAR, 0, world),
            "MPI_Gatherv");
  std::vector<std::string> out;
  if (rank != 0) return out;
  for (size_t r = 0; r < static_cast<size_t>(size); ++r) {
    out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  }
  return out;
}

// Every rank's number in rank order, on rank 0 (empty on the others).
std::vector<int64_t> gather_ints(MPI_Comm world, int mine) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  std::vector<int> all(static_cast<size_t>(size));
  check_mpi(MPI_Gather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, 0, world), "MPI_Gather");
  if (rank != 0) return {};
  return {all.begin(), all.end()};
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return std::string(name, static_cast<size_t>(length));
}

[[maybe_unused]] std::string version_text(int64_t encoded, int64_t major_unit, int64_t minor_unit) {
  return std::to_string(encoded / major_unit) + "." +
         std::to_string((encoded % major_unit) / minor_unit);
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

Provenance collect_provenance(MPI_Comm world, const std::string& shard, const SweepSpec& spec,
                              const std::string& filter) {
  Provenance p;
  p.created_utc = utc_now();
  p.interplace_version = INTERPLACE_VERSION;
  p.git_commit = INTERPLACE_GIT_COMMIT;
  p.mpi_version = mpi_library_version();
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  p.hdf5_version =
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  p.onednn_version = kernels::onednn_version();
  std::string device = "cpu (" + std::to_string(std::thread::hardware_concurrency()) +
                       " hardware threads on the node)";
#ifdef INTERPLACE_HAVE_CUDA
  // The GPU this rank would train on: by node-local rank, as the runtime picks it.
  if (kernels::cuda_device_count() > 0) {
    kernels::select_cuda_device(node_local(world).rank);
    const kernels::CudaDeviceInfo info = kernels::cuda_device_info();
    device = info.name;
    p.cuda_runtime_version = version_text(info.runtime_version, 1000, 10);
    p.cuda_driver_version = version_text(info.driver_version, 1000, 10);
    p.cudnn_version = std::to_string(info.cudnn_version / 10000) + "." +
                      std::to_string((info.cudnn_version % 10000) / 100) + "." +
                      std::to_string(info.cudnn_version % 100);
  }
#endif
  p.hosts = gather_all(world, host_name());
  p.devices = gather_all(world, device);
  p.node_local_ranks = gather_ints(world, node_local(world).rank);
  int size = 1;
  MPI_Comm_size(world, &size);
  p.world_size = size;
  p.slurm_job_id = env("SLURM_JOB_ID");
  p.slurm_array_job_id = env("SLURM_ARRAY_JOB_ID");
  p.slurm_array_task_id = env("SLURM_ARRAY_TASK_ID");
  p.shard = shard;
  p.spec_path = spec.path;
  p.spec_text = spec.text;
  p.overrides = overrides_text(spec);
  p.filter = filter;
  return p;
}

std::string overrides_text(const SweepSpec& spec) {
  std::string text;
  for (const std::string& o : spec.overrides) text += (text.empty() ? "" : "\n") + o;
  return text;
}

Shard parse_shard(const std::string& text) {
  Shard shard;
  const size_t slash = text.find('/');
  auto number = [&text](std::string_view part, int& value) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    return error == std::errc() && end == part.data() + part.size() && !part.empty();
  };
  const std::string_view all(text);
  if (slash == std::string::npos || !number(all.substr(0, slash), shard.index) ||
      !number(all.substr(slash + 1), shard.count) || shard.count < 1 || shard.index < 0 ||
      shard.index >= shard.count) {
    throw_invalid("--shard must be i/n with 0 <= i < n, got '" + text + "'");
  }
  return shard;
}

}  // namespace interplace::runs
