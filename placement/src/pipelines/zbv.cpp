// The compute actions of ZBV (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
// section 6; PyTorch's ScheduleZBVZeroBubble): 2K model stages on the v map, device j
// holding stage j (chunk 0) and stage 2K-1-j (chunk 1), every backward split into B and
// W. Device j warms up with 2(K-j)-1 forwards of chunk 0, then j pairs of chunk 1's and
// chunk 0's forward, then K-j rounds of chunk 1's F, B, W; in the steady phase a round is
// chunk 0's F (while any is left), B, W and chunk 1's F, B, W; it cools down with j pairs
// of B's (chunk 0, chunk 1), K-j of chunk 0's B and W, then the W's left, chunk 1's first.
// At T_F = T_B = T_W and zero link cost no device idles between its first and last action
// (the schedule's name); peak activations as 1F1B's, K micro-batches on device 0.
#include <algorithm>
#include <vector>

#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

std::vector<Action> zbv_compute_actions(const Schedule& header, int device) {
  const int k = header.stage_count;
  const int m = header.micro_batches;
  // The order is written for at least 2K-1 micro-batches (what fills the pipeline); with
  // fewer, the passes of the micro-batches that do not exist are left out.
  const int filled = std::max(2 * k - 1, m);
  std::vector<Action> actions;
  int forwards[2] = {0, 0}, backwards[2] = {0, 0}, weights[2] = {0, 0};
  const auto keep = [&](Action a) {
    if (a.micro_batch < m) actions.push_back(a);
  };
  const auto forward = [&](int c) {
    keep({.kind = ActionKind::forward, .micro_batch = forwards[c]++, .chunk = c});
  };
  const auto backward = [&](int c) {
    Action b = network_loss_backward(header, device, c, backwards[c]++);
    b.defers_parameters = true;
    keep(b);
  };
  const auto weight = [&](int c) {
    keep({.kind = ActionKind::backward_weight, .micro_batch = weights[c]++, .chunk = c});
  };
  for (int i = 0; i < 2 * (k - device) - 1; ++i) forward(0);
  for (int i = 0; i < device; ++i) {
    forward(1);
    forward(0);
  }
  for (int i = 0; i < k - device; ++i) {
    forward(1);
    backward(1);
    weight(1);
  }
  while (forwards[1] < forwards[0] || forwards[0] < filled) {
    if (forwards[0] < filled) forward(0);
    backward(0);
    weight(0);
    forward(1);
    backward(1);
    weight(1);
  }
  for (int i = 0; i < device; ++i) {
    backward(0);
    backward(1);
  }
  for (int i = 0; i < k - device; ++i) {
    backward(0);
    weight(0);
  }
  while (weights[1] < backwards[1]) weight(1);
  while (weights[0] < backwards[0]) weight(0);
  return actions;
}

}  // namespace interplace::placement
