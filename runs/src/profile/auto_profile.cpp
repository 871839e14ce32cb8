#include "interplace/runs/auto_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/device_presets.hpp"
#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/devices.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "runtime/torch_runtime.hpp"

namespace interplace::runs {

int auto_profile_threads(const TrainConfig& config) {
  if (config.threads_per_rank > 0) return config.threads_per_rank;
  const int host_ranks = world_node_local_recorded() ? world_node_local().size : 1;
  return std::max(1, usable_cpu_cores() / std::max(1, std::min(config.devices, host_ranks)));
}

AutoProfileKey auto_profile_key(const TrainConfig& config, int threads) {
  AutoProfileKey key;
  key.text = "model=" + config.model +
             "\nmodel_options=" + model_options_string(config.model_options) +
             "\nmicro_batch_size=" + std::to_string(config.micro_batch_samples()) +
             "\nthreads=" + std::to_string(threads) + "\ndevice=" + to_string(config.device) + "\n";
  // A graph file's network (docs/your-network.md): its path and digest; absent for zoo
  // models, whose keys stay as they were.
  if (!config.graph_file.empty()) {
    key.text += "graph_file=" + config.graph_file + "\ngraph_digest=" + config.graph_digest + "\n";
  }
  if (config.runtime == RuntimeKind::torch) key.text += "runtime=torch\n";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(key.text)));
  key.id = hex;
  return key;
}

ProfileRequest auto_profile_request(const TrainConfig& config, int threads) {
  ProfileRequest request;
  request.model = config.model;
  request.graph_file = config.graph_file;
  request.options = config.model_options;
  request.options.batch_size = config.micro_batch_samples();
  request.threads = threads;
  request.device = config.device.kind();
  request.seed = config.seed;
  const placement::DevicePreset& preset = placement::device_preset_by_name(config.cost_device);
  request.fallback_link = preset.link;
  request.fallback_link_name = preset.name;
  request.memory_bandwidth_bytes_per_s = preset.device.memory_bandwidth_bytes_per_s;
  return request;
}

std::string measure_auto_profile(const TrainConfig& config, int threads, MPI_Comm comm,
                                 const std::string& comment) {
  if (config.runtime == RuntimeKind::torch) return measure_torch_profile(config, threads, comm);
  const MeasuredProfile measured = measure_profile(auto_profile_request(config, threads), comm);
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank == 0 ? profile_file_text(measured, comment) : std::string();  // rank 0's counts
}

std::string profile_file_text(const MeasuredProfile& measured, const std::string& comment) {
  std::ostringstream text;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) text << "# " << line << "\n";
  text << "# link: " << measured.link_source << "; " << measured.threads << " CPU threads, "
       << measured.ranks << " ranks\n";
  placement::write_profile(text, measured.profile);
  return text.str();
}

std::shared_ptr<const placement::Profile> parse_profile_text(const std::string& text,
                                                             const std::string& source) {
  std::istringstream in(text);
  return std::make_shared<const placement::Profile>(placement::read_profile(in, source));
}

std::string broadcast_text(const std::string& text, MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  unsigned long long size = text.size();
  check_mpi(MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, comm), "MPI_Bcast");
  std::string out = rank == 0 ? text : std::string(size, '\0');
  if (size > 0) {
    check_mpi(MPI_Bcast(out.data(), static_cast<int>(size), MPI_CHAR, 0, comm), "MPI_Bcast");
  }
  return out;
}

AgreedProfile measure_on_every_rank(const std::function<std::string()>& measure, MPI_Comm comm) {
  std::string text, error;
  try {
    text = measure();
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = broadcast_text(error, comm);  // rank 0's: the others' parts end without a profile
  if (!error.empty()) throw_runtime("measuring the profile (profile:auto) failed: " + error);
  AgreedProfile agreed{broadcast_text(text, comm), nullptr};
  agreed.profile = parse_profile_text(agreed.text, "the profile measured in this job");
  return agreed;
}

}  // namespace interplace::runs
