// Device-to-device transfers between two MPI ranks on one node, by two paths, at 64 KiB to
// 64 MiB: the runtime's host staging (copy to pinned host memory, MPI, copy to the GPU,
// as runs/src/runtime/messenger.cpp sends every tensor) and CUDA IPC (each rank exports a
// device buffer with cudaIpcGetMemHandle, the peer opens it once with
// cudaIpcOpenMemHandle and copies from it device to device; MPI carries only a one-int
// signal that the data is ready). A ping-pong: rank 0 sends, rank 1 sends back; the half
// round trip is one transfer. Prints one JSON object per path and size, and a table.
//   mpirun -np 2 bench_transfer_gpu [--repeats N]
// Both ranks use GPU (node-local rank) mod (GPUs): two ranks sharing one GPU exercise the
// IPC path (same device, two processes). Where IPC is refused (a sandbox, GPUs without
// peer access) its rows say why and the staged rows still come. Exit status 0 when both
// ranks finished, 1 on an error.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kTag = 7101;
constexpr int kWarmup = 3;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

void check_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string path;
  int64_t bytes;
  int trips;
  double half_round_trip_s;
};

// The runtime's path: device -> pinned host -> MPI -> pinned host -> device, every copy
// waited for (the Messenger's copy_from blocks).
double staged(int rank, int64_t bytes, int trips, float* device, float* pinned) {
  const int peer = 1 - rank;
  const auto n = static_cast<size_t>(bytes);
  const int count = static_cast<int>(bytes);
  auto send = [&] {
    check(cudaMemcpy(pinned, device, n, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    check_mpi(MPI_Send(pinned, count, MPI_BYTE, peer, kTag, MPI_COMM_WORLD), "MPI_Send");
  };
  auto receive = [&] {
    check_mpi(MPI_Recv(pinned, count, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
    check(cudaMemcpy(device, pinned, n, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  };
  std::vector<double> times;
  for (int trip = 0; trip < kWarmup + trips; ++trip) {
    const double start = MPI_Wtime();
    if (rank == 0) {
      send();
      receive();
    } else {
      receive();
      send();
    }
    if (trip >= kWarmup) times.push_back((MPI_Wtime() - start) / 2);
  }
  return median(times);
}

// CUDA IPC: the sender's data already sits in its exported buffer; it signals, and the
// receiver copies from the peer's buffer into its own on the device, then answers the
// same way. The copy is waited for (cudaDeviceSynchronize) before the answer, so the data
// has arrived.
double ipc(int rank, int64_t bytes, int trips, float* own, const float* peer_buffer) {
  const int peer = 1 - rank;
  const auto n = static_cast<size_t>(bytes);
  int signal = 1;
  auto send = [&] {
    check_mpi(MPI_Send(&signal, 1, MPI_INT, peer, kTag, MPI_COMM_WORLD), "MPI_Send");
  };
  auto receive = [&] {
    check_mpi(MPI_Recv(&signal, 1, MPI_INT, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
    check(cudaMemcpy(own, peer_buffer, n, cudaMemcpyDeviceToDevice), "cudaMemcpy peer");
    // A device-to-device cudaMemcpy may return before the copy ends (the CUDA runtime API
    // documents no host synchronisation for it): without this wait the figure is the
    // enqueue (64 MiB in 4.7 us, three times HBM's bandwidth, on the H200).
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the peer copy");
  };
  std::vector<double> times;
  for (int trip = 0; trip < kWarmup + trips; ++trip) {
    const double start = MPI_Wtime();
    if (rank == 0) {
      send();
      receive();
    } else {
      receive();
      send();
    }
    if (trip >= kWarmup) times.push_back((MPI_Wtime() - start) / 2);
  }
  return median(times);
}

// Exports `buffer`, swaps handles with the peer and opens the peer's. Both ranks agree on
// the outcome (an allreduce), so a refusal on one side does not leave the other waiting;
// the reason is returned, empty when IPC works.
std::string open_peer(int rank, float* buffer, void** peer_buffer) {
  std::string reason;
  cudaIpcMemHandle_t own{}, theirs{};
  cudaError_t status = cudaIpcGetMemHandle(&own, buffer);
  if (status != cudaSuccess)
    reason = std::string("cudaIpcGetMemHandle: ") + cudaGetErrorString(status);
  const int peer = 1 - rank;
  constexpr int kHandleBytes = static_cast<int>(sizeof(cudaIpcMemHandle_t));
  check_mpi(MPI_Sendrecv(&own, kHandleBytes, MPI_BYTE, peer, kTag, &theirs, kHandleBytes, MPI_BYTE,
                         peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
  if (reason.empty()) {
    status = cudaIpcOpenMemHandle(peer_buffer, theirs, cudaIpcMemLazyEnablePeerAccess);
    if (status != cudaSuccess) {
      reason = std::string("cudaIpcOpenMemHandle: ") + cudaGetErrorString(status);
      *peer_buffer = nullptr;
    }
  }
  int ok = reason.empty() ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (!ok && reason.empty()) reason = "the peer could not open or export its buffer";
  if (!ok && *peer_buffer != nullptr) {
    cudaIpcCloseMemHandle(*peer_buffer);
    *peer_buffer = nullptr;
  }
  return reason;
}

int run(int argc, char** argv) {
  int repeats = 0;  // 0: by size, as interplace profile's ping-pong
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
      if (repeats < 1) throw std::invalid_argument("--repeats must be >= 1");
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "' (valid: --repeats N)");
    }
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) throw std::invalid_argument("run on exactly 2 ranks (mpirun -np 2)");
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int node_size = 0, node_rank = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  if (node_size != 2) throw std::invalid_argument("both ranks must be on one node (CUDA IPC)");
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1) throw std::runtime_error("no CUDA device");
  check(cudaSetDevice(node_rank % devices), "cudaSetDevice");

  constexpr int64_t kLargest = int64_t{64} << 20;
  std::vector<int64_t> sizes;
  for (int64_t bytes = int64_t{64} << 10; bytes <= kLargest; bytes *= 4) sizes.push_back(bytes);
  float* device = nullptr;
  float* pinned = nullptr;
  check(cudaMalloc(&device, kLargest), "cudaMalloc");
  check(cudaMallocHost(&pinned, kLargest), "cudaMallocHost");
  check(cudaMemset(device, 0, kLargest), "cudaMemset");
  void* peer_buffer = nullptr;
  const std::string ipc_reason = open_peer(rank, device, &peer_buffer);

  std::vector<Row> rows;
  for (const int64_t bytes : sizes) {
    const int trips =
        repeats > 0 ? repeats : static_cast<int>(std::clamp<int64_t>(kLargest / bytes, 5, 1000));
    rows.push_back({"host-staged", bytes, trips, staged(rank, bytes, trips, device, pinned)});
    if (ipc_reason.empty()) {
      rows.push_back({"cuda-ipc", bytes, trips,
                      ipc(rank, bytes, trips, device, static_cast<const float*>(peer_buffer))});
    }
  }
  if (peer_buffer != nullptr) cudaIpcCloseMemHandle(peer_buffer);
  MPI_Barrier(MPI_COMM_WORLD);  // the peer's handle is closed before the buffer goes
  cudaFreeHost(pinned);
  cudaFree(device);
  if (rank != 0) return 0;

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, node_rank % devices), "cudaGetDeviceProperties");
  std::printf("# %s, %d GPU(s) on the node, ranks on GPUs %d and %d\n", prop.name, devices, 0,
              1 % devices);
  if (!ipc_reason.empty()) std::printf("# cuda-ipc: not measured (%s)\n", ipc_reason.c_str());
  std::printf("%-12s %12s %6s %14s %12s\n", "path", "bytes", "trips", "half trip us", "GB/s");
  for (const Row& r : rows) {
    std::printf("%-12s %12lld %6d %14.1f %12.2f\n", r.path.c_str(), static_cast<long long>(r.bytes),
                r.trips, r.half_round_trip_s * 1e6,
                static_cast<double>(r.bytes) / r.half_round_trip_s / 1e9);
  }
  for (const Row& r : rows) {
    std::printf(
        "{\"path\": \"%s\", \"bytes\": %lld, \"trips\": %d, \"half_round_trip_s\": %.9g, "
        "\"bandwidth_bytes_per_s\": %.6g}\n",
        r.path.c_str(), static_cast<long long>(r.bytes), r.trips, r.half_round_trip_s,
        static_cast<double>(r.bytes) / r.half_round_trip_s);
  }
  if (!ipc_reason.empty()) {
    std::printf("{\"path\": \"cuda-ipc\", \"unavailable\": \"%s\"}\n", ipc_reason.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "bench_transfer_gpu: error: %s\n", e.what());
    status = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_transfer_gpu: error: %s\n", e.what());
    status = 1;
  }
  if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}
