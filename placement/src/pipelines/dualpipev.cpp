// The compute actions of DualPipeV (DeepSeek-V3's DualPipe, arXiv 2412.19437, folded onto
// the v stage map; PyTorch's ScheduleDualPipeV, from deepseek-ai/DualPipe): 2K model
// stages, device j holding stage j (chunk 0) and 2K-1-j (chunk 1). Its steady phase runs
// overlapped pairs, the forward of one chunk with a whole backward of the other
// (forward_backward actions); the warm-up and the drain split some backwards into B and W
// (zero bubble), the W's in the order of their B's. Needs M >= 2K micro-batches.
// Device j, in steps:
//   1  2(K-j-1) forwards of chunk 0
//   2  j+1 pairs of forwards: chunk 0, chunk 1
//   3  K-j-1 rounds: chunk 1's B, a pending W, chunk 1's F
//   4  M-2K+j+1 rounds: (F chunk 0 + whole B chunk 1), (F chunk 1 + whole B chunk 0); the
//      last device's first round runs its F and B apart
//   5  K-j-1 rounds: whole B of chunk 1, (F chunk 1 + whole B chunk 0)
//   6  j+1 rounds: B of chunk 1, B of chunk 0; the second half of them split (B, W later)
//   7  K-j-1 rounds: a pending W, B of chunk 0 (split if step 6 began splitting)
//   8  j+1 pending W's
#include <deque>
#include <utility>
#include <vector>

#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

std::vector<Action> dualpipev_compute_actions(const Schedule& header, int device) {
  const int k = header.stage_count;
  const int m = header.micro_batches;
  const int j = device;
  std::vector<Action> actions;
  int forwards[2] = {0, 0}, backwards[2] = {0, 0};
  std::deque<std::pair<int, int>> pending_weights;  // (chunk, micro-batch) of split B's
  const auto forward_of = [&](int c) {
    return Action{.kind = ActionKind::forward, .micro_batch = forwards[c]++, .chunk = c};
  };
  // A backward of chunk c: whole, or its B alone with the W queued.
  const auto backward_of = [&](int c, bool split) {
    Action b = network_loss_backward(header, device, c, backwards[c]++);
    b.defers_parameters = split;
    if (split) pending_weights.emplace_back(c, b.micro_batch);
    return b;
  };
  const auto forward = [&](int c) { actions.push_back(forward_of(c)); };
  const auto backward = [&](int c, bool split) { actions.push_back(backward_of(c, split)); };
  const auto pair = [&](int forward_chunk, int backward_chunk) {
    const Action f = forward_of(forward_chunk);
    actions.push_back(overlapped(f, backward_of(backward_chunk, false)));
  };
  const auto pending_weight = [&] {
    if (pending_weights.empty()) return;
    const auto [c, micro] = pending_weights.front();
    pending_weights.pop_front();
    actions.push_back({.kind = ActionKind::backward_weight, .micro_batch = micro, .chunk = c});
  };
  for (int i = 0; i < 2 * (k - j - 1); ++i) forward(0);
  for (int i = 0; i < j + 1; ++i) {
    forward(0);
    forward(1);
  }
  for (int i = 0; i < k - j - 1; ++i) {
    backward(1, true);
    pending_weight();
    forward(1);
  }
  for (int i = 0; i < m - 2 * k + j + 1; ++i) {
    if (i == 0 && j == k - 1) {  // the last device's turn: nothing to overlap with yet
      forward(0);
      backward(1, false);
    } else {
      pair(0, 1);
    }
    pair(1, 0);
  }
  for (int i = 0; i < k - j - 1; ++i) {
    backward(1, false);
    pair(1, 0);
  }
  bool split = false;
  for (int i = 0; i < j + 1; ++i) {
    if (i == (j + 1) / 2 && j % 2 == 1) split = true;
    backward(1, split);
    if (i == (j + 1) / 2 && j % 2 == 0) split = true;
    backward(0, split);
  }
  for (int i = 0; i < k - j - 1; ++i) {
    pending_weight();
    backward(0, split);
  }
  for (int i = 0; i < j + 1; ++i) pending_weight();
  return actions;
}

}  // namespace interplace::placement
