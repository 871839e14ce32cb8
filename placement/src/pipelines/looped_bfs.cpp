// The compute actions of looped BFS (breadth-first pipeline parallelism, Lamy-Poirier,
// arXiv 2211.05953; torch.distributed.pipelining's ScheduleLoopedBFS): device j runs
// every micro-batch's forward of its chunk 0, then of chunk 1, .., then the backwards of
// its last chunk first, each chunk's micro-batches in reverse.
#include <vector>

#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

std::vector<Action> looped_bfs_compute_actions(const Schedule& header, int device) {
  const int v = header.virtual_stages;
  const int m = header.micro_batches;
  std::vector<Action> actions;
  for (int c = 0; c < v; ++c) {
    for (int i = 0; i < m; ++i) {
      actions.push_back({.kind = ActionKind::forward, .micro_batch = i, .chunk = c});
    }
  }
  for (int c = v - 1; c >= 0; --c) {
    for (int i = m - 1; i >= 0; --i) {
      actions.push_back(network_loss_backward(header, device, c, i));
    }
  }
  return actions;
}

}  // namespace interplace::placement
