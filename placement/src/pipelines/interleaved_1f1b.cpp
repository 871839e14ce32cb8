// The compute actions of interleaved 1F1B (Narayanan et al., SC 2021; schedule.hpp says
// the order): device j's M*V chunk passes in Megatron-LM's order; and of interleaved zero
// bubble (Qi et al., ICLR 2024, their ZB1P; PyTorch's ScheduleInterleavedZeroBubble), the
// same order with every backward split into B and W, device j's W of the n-th backward
// right after its (n+j)-th B and the rest after its last B.
#include <algorithm>
#include <vector>

#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {

std::vector<Action> interleaved_compute_actions(const Schedule& header, int device) {
  const int k = header.stage_count;
  const int v = header.virtual_stages;
  const int passes = header.micro_batches * v;  // chunk forwards (and backwards) per device
  const bool zero_bubble = header.pipeline == PipelineKind::interleaved_zb;
  // Pass n of a direction: the groups of K micro-batches go through the chunks in turn
  // (ascending for forwards, descending for backwards), so that a group leaving device K-1
  // finds device 0 ready for its next chunk.
  const auto chunk_of = [&](int n, bool forward) {
    const int c = (n % (k * v)) / k;
    return forward ? c : v - 1 - c;
  };
  const auto micro_of = [&](int n) { return (n / (k * v)) * k + n % k; };
  // 1F1B's warm-up, K-1-j, plus the (V-1) K forwards of the chunks before the last one's
  // first group: the last stage's first backward comes right after its first forward.
  const int warm_up = std::min(passes, (v - 1) * k + k - 1 - device);
  std::vector<Action> actions;
  int weights = 0;  // zero bubble: the backwards whose W has run
  const auto forward = [&](int n) {
    actions.push_back(
        {.kind = ActionKind::forward, .micro_batch = micro_of(n), .chunk = chunk_of(n, true)});
  };
  const auto weight = [&] {
    actions.push_back({.kind = ActionKind::backward_weight,
                       .micro_batch = micro_of(weights),
                       .chunk = chunk_of(weights, false)});
    ++weights;
  };
  const auto backward = [&](int n) {
    Action b = network_loss_backward(header, device, chunk_of(n, false), micro_of(n));
    b.defers_parameters = zero_bubble;
    actions.push_back(b);
    if (zero_bubble && n >= device) weight();
  };
  for (int n = 0; n < warm_up; ++n) forward(n);
  for (int n = 0; n < passes; ++n) {
    if (n + warm_up < passes) forward(n + warm_up);
    backward(n);
  }
  while (zero_bubble && weights < passes) weight();
  return actions;
}

}  // namespace interplace::placement
