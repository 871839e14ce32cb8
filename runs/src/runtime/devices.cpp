#include "interplace/runs/devices.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/name_choices.hpp"
#ifdef INTERPLACE_HAVE_CUDA
#include "interplace/kernels/cuda.hpp"
#endif

namespace interplace::runs {

const std::vector<std::string>& device_names() {
  static const std::vector<std::string> names = {"cpu", "cuda"};
  return names;
}

int usable_cpu_cores() {
  cpu_set_t allowed;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    cores = std::max(1, CPU_COUNT(&allowed));
  return cores;
}

void check_thread_count(const std::string& option, int threads) {
  const int cores = usable_cpu_cores();
  if (threads < 0 || threads > cores) {
    throw_invalid(option + " must be in 0.." + std::to_string(cores) + " (the " +
                  std::to_string(cores) + " CPU cores this process may use), got " +
                  std::to_string(threads) + ". HINT: 0 shares the node's cores among its ranks");
  }
}

kernels::Device device_by_name(const std::string& name) {
  require_name("device", name, device_names());
  return name == "cuda" ? kernels::Device::cuda : kernels::Device::cpu;
}

void require_device_support(kernels::Device device) {
#ifndef INTERPLACE_HAVE_CUDA
  if (device == kernels::Device::cuda) {
    throw_invalid(
        "device cuda: this build of interplace has no CUDA backend (configure with "
        "-DINTERPLACE_CUDA=ON)");
  }
#endif
  (void)device;
}

void start_device(kernels::Device device) {
  require_device_support(device);
  if (device == kernels::Device::cpu) return;
#ifdef INTERPLACE_HAVE_CUDA
  if (kernels::cuda_device_count() == 0) {
    kernels::init_cuda_backend();  // for its reason
    throw_runtime("device cuda: no usable GPU on this node (" + kernels::cuda_unavailable_reason() +
                  ")");
  }
  kernels::select_cuda_device(world_node_local().rank);
  if (!kernels::init_cuda_backend()) {
    throw_runtime("device cuda: the CUDA backend did not start (" +
                  kernels::cuda_unavailable_reason() + ")");
  }
#endif
}

std::string device_description(kernels::Device device, int cpu_threads) {
#ifdef INTERPLACE_HAVE_CUDA
  if (device == kernels::Device::cuda) return kernels::to_string(kernels::cuda_device_info());
#endif
  (void)device;
  return "cpu: " + std::to_string(cpu_threads) + " threads";
}

}  // namespace interplace::runs
