// The device a rank computes on, for `interplace train`, sweeps and `interplace profile`:
// the CPU, or one GPU per rank chosen by the rank's place on its node (docs/runtime.md).
#pragma once

#include <string>
#include <vector>

#include "interplace/kernels/tensor.hpp"

namespace interplace::runs {

// "cpu" or "cuda"; anything else is invalid input naming both.
kernels::Device device_by_name(const std::string& name);
const std::vector<std::string>& device_names();  // {"cpu", "cuda"}

// Throws invalid input when this build cannot compute on `device` (cuda without the CUDA
// backend); what planning checks, before any rank looks for hardware.
void require_device_support(kernels::Device device);

// Makes `device` ready on this rank. For cuda: GPU (node-local rank in MPI_COMM_WORLD,
// as MpiSession recorded it) mod (GPUs this rank sees), so every configuration of a
// sweep uses the same one; a runtime error when there is none or its backend does not
// start, an invalid-input error in a build without CUDA. Nothing to do for the CPU.
void start_device(kernels::Device device);

// The CPU cores this process may run on (its affinity mask: Slurm and taskset restrict
// it), at least 1.
int usable_cpu_cores();
// Throws invalid_input, naming `option`, when `threads` is negative or more than
// usable_cpu_cores(): oversubscribing a shared node this way only slows every job on it,
// and libgomp crashes or stalls for minutes at thousands of threads. 0 means
// "choose for me" and is always accepted.
void check_thread_count(const std::string& option, int threads);

// How records and profiles name the device: "cpu: N threads", or the GPU's description
// (name, memory, CUDA, cuDNN and cuBLAS versions).
std::string device_description(kernels::Device device, int cpu_threads);

}  // namespace interplace::runs
