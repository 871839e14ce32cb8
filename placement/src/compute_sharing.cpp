#include "interplace/placement/compute_sharing.hpp"

#include <algorithm>
#include <string>

#include "interplace/kernels/error.hpp"
#include "shared_compute_clock.hpp"

namespace interplace::placement {

ComputeSharing ComputeSharing::consecutive(int devices, int ranks_per_host,
                                           const HostSharing& table) {
  if (devices < 1) throw_invalid("compute sharing: devices must be >= 1");
  if (ranks_per_host < 1) {
    throw_invalid("ranks per host must be >= 1, got " + std::to_string(ranks_per_host));
  }
  ComputeSharing sharing;
  sharing.table = table;
  for (int d = 0; d < devices; ++d) sharing.host_of_device.push_back(d / ranks_per_host);
  return sharing;
}

namespace detail {

SharedComputeClock::SharedComputeClock(int devices, const ComputeSharing& sharing)
    : sharing_(&sharing), units_(static_cast<size_t>(devices)) {
  if (sharing.active() && static_cast<int>(sharing.host_of_device.size()) != devices) {
    throw_invalid("compute sharing: " + std::to_string(sharing.host_of_device.size()) +
                  " devices mapped to hosts, the schedule has " + std::to_string(devices));
  }
  for (int d = 0; d < devices; ++d) {
    const int host = sharing.active() ? sharing.host_of_device[static_cast<size_t>(d)] : d;
    if (host < 0) throw_invalid("compute sharing: negative host index");
    host_of_.push_back(host);
    if (host >= static_cast<int>(ranks_on_host_.size())) {
      ranks_on_host_.resize(static_cast<size_t>(host) + 1, 0);
    }
    ++ranks_on_host_[static_cast<size_t>(host)];
  }
  busy_on_host_.assign(ranks_on_host_.size(), 0);
}

double SharedComputeClock::rate_on(int host) const {
  if (!sharing_->active()) return 1.0;
  const auto h = static_cast<size_t>(host);
  return 1.0 / sharing_->table.factor(ranks_on_host_[h], busy_on_host_[h]);
}

void SharedComputeClock::rerate(int host, double now_s) {
  const double rate = rate_on(host);
  for (size_t d = 0; d < units_.size(); ++d) {
    Unit& unit = units_[d];
    if (!unit.running || host_of_[d] != host || unit.rate == rate) continue;
    unit.remaining_s = std::max(0.0, unit.remaining_s - (now_s - unit.since_s) * unit.rate);
    unit.since_s = now_s;
    unit.rate = rate;
    unit.end_s = now_s + unit.remaining_s / rate;
  }
}

void SharedComputeClock::start(int device, double now_s, double work_s) {
  const auto d = static_cast<size_t>(device);
  if (units_[d].running) throw_runtime("simulator: a device started two compute units at once");
  const int host = host_of_[d];
  ++busy_on_host_[static_cast<size_t>(host)];
  const double rate = rate_on(host);
  rerate(host, now_s);  // the others slow down from now on
  units_[d] = {true, work_s, now_s, rate, rate == 1.0 ? now_s + work_s : now_s + work_s / rate};
}

std::pair<int, double> SharedComputeClock::next_end() const {
  std::pair<int, double> next{-1, std::numeric_limits<double>::infinity()};
  for (size_t d = 0; d < units_.size(); ++d) {
    if (units_[d].running && units_[d].end_s < next.second) {
      next = {static_cast<int>(d), units_[d].end_s};
    }
  }
  return next;
}

void SharedComputeClock::finish(int device, double now_s) {
  const auto d = static_cast<size_t>(device);
  if (!units_[d].running) throw_runtime("simulator: finished a unit that was not running");
  units_[d] = Unit{};
  const int host = host_of_[d];
  --busy_on_host_[static_cast<size_t>(host)];
  rerate(host, now_s);
}

}  // namespace detail
}  // namespace interplace::placement
