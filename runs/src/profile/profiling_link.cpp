// The MPI ping-pong of `interplace profile` (see profiling.hpp).
#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/tensor.hpp"
#include "interplace/runs/mpi_session.hpp"
#include "interplace/runs/profiling.hpp"
#include "runtime/instant.hpp"
#include "runtime/messenger.hpp"

namespace interplace::runs {
namespace {

constexpr int kTag = 7001;
constexpr int kWarmupRoundTrips = 2;

// Enough round trips for a stable median of small messages, few for the large ones
// (a 64 MiB round trip takes tens of milliseconds); both ranks compute the same count.
int round_trips(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t{1} << 26) / bytes, 5, 1000));
}

}  // namespace

std::vector<int64_t> ping_pong_sizes(int64_t max_bytes, int64_t unit) {
  if (max_bytes < 1) throw_invalid("largest ping-pong message must be >= 1 byte");
  if (unit < 1) throw_invalid("ping-pong size unit must be >= 1 byte");
  std::vector<int64_t> sizes;
  const auto add = [&](int64_t bytes) {
    const int64_t rounded = (bytes + unit - 1) / unit * unit;
    if (sizes.empty() || rounded > sizes.back()) sizes.push_back(rounded);
  };
  for (int64_t bytes = 1; bytes < max_bytes; bytes *= 4) add(bytes);
  add(max_bytes);
  return sizes;
}

LinkPeers link_peers(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  MPI_Comm shared = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  int lowest_here = rank;  // 0 on rank 0's host only
  check_mpi(MPI_Allreduce(&rank, &lowest_here, 1, MPI_INT, MPI_MIN, shared), "MPI_Allreduce");
  int local_size = 1;
  MPI_Comm_size(shared, &local_size);
  MPI_Comm_free(&shared);
  const bool with_zero = lowest_here == 0;
  constexpr int kNone = std::numeric_limits<int>::max();
  int mine[2] = {with_zero && rank != 0 ? rank : kNone, with_zero ? kNone : rank};
  int lowest[2] = {kNone, kNone};
  check_mpi(MPI_Allreduce(mine, lowest, 2, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  int rank_zero_local_size = rank == 0 ? local_size : 0;
  int devices_per_node = 0;
  check_mpi(MPI_Allreduce(&rank_zero_local_size, &devices_per_node, 1, MPI_INT, MPI_MAX, comm),
            "MPI_Allreduce");
  LinkPeers peers;
  peers.intra = lowest[0] == kNone ? -1 : lowest[0];
  peers.inter = lowest[1] == kNone ? -1 : lowest[1];
  peers.devices_per_node = devices_per_node;
  return peers;
}

LinkMeasurement measure_link(MPI_Comm comm, int64_t max_bytes, int peer, kernels::Device device) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  LinkMeasurement result;
  if (peer < 1 || peer >= size || (rank != 0 && rank != peer)) return result;
  if (max_bytes > int64_t{1} << 30) throw_invalid("largest ping-pong message must be <= 1 GiB");
  const bool on_device = device != kernels::Device::cpu;
  const std::vector<int64_t> sizes = ping_pong_sizes(max_bytes, on_device ? 4 : 1);
  std::vector<char> buffer(on_device ? 0 : static_cast<size_t>(max_bytes), 1);
  const int other = rank == 0 ? peer : 0;
  for (const int64_t bytes : sizes) {
    // On a device: whole floats, a device tensor and its pinned staging buffer, as the
    // Messenger's send (copy out, then MPI) and receive (MPI, then copy in).
    const int64_t floats = bytes / 4;
    kernels::Tensor device_tensor, staging;
    if (on_device) {
      device_tensor = kernels::Tensor::full({floats}, 1.0f, device);
      staging = kernels::Tensor::host_staging({floats});
    }
    void* data = on_device ? static_cast<void*>(staging.data()) : buffer.data();
    const int count = static_cast<int>(bytes);
    auto send = [&] {
      if (on_device) staging.copy_from(device_tensor);
      check_mpi(MPI_Send(data, count, MPI_BYTE, other, kTag, comm), "MPI_Send");
    };
    auto receive = [&] {
      check_mpi(MPI_Recv(data, count, MPI_BYTE, other, kTag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
      if (on_device) device_tensor.copy_from(staging);
    };
    const int trips = round_trips(bytes);
    std::vector<double> half_round_trip_s;
    for (int trip = 0; trip < kWarmupRoundTrips + trips; ++trip) {
      if (rank == 0) {
        const double start = MPI_Wtime();
        send();
        receive();
        if (trip >= kWarmupRoundTrips) half_round_trip_s.push_back((MPI_Wtime() - start) / 2);
      } else {
        receive();
        send();
      }
    }
    if (rank != 0) continue;
    std::nth_element(
        half_round_trip_s.begin(),
        half_round_trip_s.begin() + static_cast<ptrdiff_t>(half_round_trip_s.size() / 2),
        half_round_trip_s.end());
    result.samples.push_back({bytes, trips, half_round_trip_s[half_round_trip_s.size() / 2]});
  }
  if (rank != 0) return result;
  result.measured = true;
  result.link.latency_s = result.samples.front().half_round_trip_s;
  for (const PingPongSample& sample : result.samples) {
    result.link.curve.push_back({sample.bytes, sample.half_round_trip_s});
  }
  const PingPongSample& largest = result.samples.back();
  // A zero time (a timer too coarse) would mean an infinite bandwidth, which the format
  // allows, but it would be a wrong measurement: floor it at the timer's resolution.
  result.link.bandwidth_bytes_per_s =
      static_cast<double>(largest.bytes) / std::max(largest.half_round_trip_s, MPI_Wtick());
  return result;
}

std::vector<placement::LinkPoint> measure_receive_cpu(MPI_Comm comm, int peer,
                                                      const std::vector<int64_t>& sizes,
                                                      bool cpu_clock) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<placement::LinkPoint> curve;
  const bool playing = peer >= 1 && peer < size && (rank == 0 || rank == peer);
  // The barriers below run on a communicator of the two ranks alone.
  MPI_Comm pair = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm, playing ? 0 : MPI_UNDEFINED, rank, &pair), "MPI_Comm_split");
  if (!playing) return curve;
  {
    Messenger msg(pair);
    const int other = rank == 0 ? 1 : 0;
    const auto clock = [cpu_clock] { return cpu_clock ? thread_cpu_s() : wall_s(); };
    for (int sweep = 0; sweep < 2; ++sweep) {
      curve.clear();
      int64_t previous = 0;
      for (const int64_t requested : sizes) {
        const int64_t floats = std::max<int64_t>(1, (requested + 3) / 4);
        if (floats * 4 <= previous) continue;  // 1 B and 4 B are one float
        previous = floats * 4;
        // 64 MiB a burst at most (the sender holds them all), 8 to 64 messages.
        const int count =
            static_cast<int>(std::clamp<int64_t>((int64_t{1} << 26) / previous, 8, 64));
        if (rank != 0) {
          for (int i = 0; i < count; ++i) {
            msg.send(kernels::Tensor::full({floats}, 1.0f), other, Messenger::kFirstDataTag + i);
          }
          msg.barrier();  // every message is on its way before rank 0 takes any
          msg.complete_sends();
          msg.barrier();
          continue;
        }
        msg.barrier();
        std::vector<double> taken_s;
        for (int i = 0; i < count; ++i) {
          const double start = clock();
          const kernels::Tensor t = msg.receive({floats}, other, Messenger::kFirstDataTag + i);
          taken_s.push_back(clock() - start);
        }
        msg.barrier();
        const auto middle = taken_s.begin() + static_cast<ptrdiff_t>(taken_s.size() / 2);
        std::nth_element(taken_s.begin(), middle, taken_s.end());
        curve.push_back({previous, *middle});
      }
    }
  }
  MPI_Comm_free(&pair);
  return curve;
}

void quiet_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  int done = 0;
  while (true) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace interplace::runs
