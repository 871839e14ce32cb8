// The compute actions of GPipe, 1F1B and ZB-H1, and of the local and interlocking
// strategies (which run 1F1B's order): per device, the forward and backward parts of each
// micro-batch along the strategy's gradient flows (schedule.hpp says the orders).
#include <algorithm>
#include <vector>

#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {
namespace {

// A gradient flow: from the loss at `source` back to the body it trains at `destination`.
struct Flow {
  int source = 0;
  int destination = 0;
  bool updates_every_stage = false;  // the network's loss trains every body it passes

  bool updates(int stage) const { return updates_every_stage || stage == destination; }
};

std::vector<Flow> gradient_flows(int stage_count, int reach, InterlockMode mode) {
  const int last = stage_count - 1;
  std::vector<Flow> flows;
  if (mode == InterlockMode::sum) {
    for (int t = 0; t <= last - 1; ++t) flows.push_back({t, std::max(0, t - reach), true});
  } else if (reach < last) {
    for (int t = reach; t <= last - 1; ++t) flows.push_back({t, t - reach, false});
  }
  flows.push_back({last, std::max(0, last - reach), true});
  return flows;
}

class StageBuilder {
 public:
  StageBuilder(const Schedule& schedule, int stage) : schedule_(schedule), stage_(stage) {
    for (const Flow& flow :
         gradient_flows(schedule.stage_count, schedule.reach, schedule.interlock)) {
      if (flow.source == stage) own_flow_ = flow;
      if (flow.source > stage && flow.destination <= stage) arriving_.push_back(flow);
    }
    std::sort(arriving_.begin(), arriving_.end(),
              [](const Flow& a, const Flow& b) { return a.source < b.source; });
    for (const Flow& flow : arriving_) warm_up_ = std::max(warm_up_, flow.source - stage);
    warm_up_ = std::min(warm_up_, schedule.micro_batches);
  }

  std::vector<Action> build() {
    const int micro_batches = schedule_.micro_batches;
    if (schedule_.pipeline == PipelineKind::gpipe) {
      for (int m = 0; m < micro_batches; ++m) forward_part(m, /*own_pass=*/false);
      for (int m = 0; m < micro_batches; ++m) backward_part(m, /*own_pass=*/true);
    } else {
      for (int m = 0; m < warm_up_; ++m) forward_part(m, true);
      for (int m = 0; m < micro_batches; ++m) {
        if (m + warm_up_ < micro_batches) forward_part(m + warm_up_, true);
        backward_part(m, false);
      }
    }
    // ZB-H1: the W's put off past the last B.
    while (next_weight_ < deferred_) weight_pass(next_weight_++);
    return std::move(actions_);
  }

 private:
  void forward_part(int m, bool own_pass) {
    actions_.push_back({.kind = ActionKind::forward, .micro_batch = m});
    if (schedule_.has_aux_head[stage_]) {
      actions_.push_back({.kind = ActionKind::aux_forward, .micro_batch = m});
      actions_.push_back({.kind = ActionKind::aux_backward, .micro_batch = m});
    }
    if (own_pass && own_flow_.source == stage_) backward_pass(m, own_flow_);
  }

  void backward_part(int m, bool own_pass) {
    if (own_pass && own_flow_.source == stage_) backward_pass(m, own_flow_);
    for (const Flow& flow : arriving_) backward_pass(m, flow);
  }

  void backward_pass(int m, const Flow& flow) {
    const bool defers = zero_bubble_ && flow.updates(stage_);
    actions_.push_back({.kind = ActionKind::backward,
                        .micro_batch = m,
                        .loss_stage = flow.source,
                        .updates_parameters = flow.updates(stage_),
                        .propagates_gradient = stage_ > flow.destination,
                        .defers_parameters = defers});
    if (!defers) return;
    // W(m - j) after B(m) on stage j: the B's of the first j micro-batches go without.
    ++deferred_;
    if (deferred_ - next_weight_ > stage_) weight_pass(next_weight_++);
  }

  void weight_pass(int m) {
    actions_.push_back({.kind = ActionKind::backward_weight, .micro_batch = m});
  }

  const Schedule& schedule_;
  int stage_;
  Flow own_flow_{-1, -1, false};
  std::vector<Flow> arriving_;
  int warm_up_ = 0;
  bool zero_bubble_ = schedule_.pipeline == PipelineKind::zb_h1;
  int deferred_ = 0;     // ZB-H1: B's so far (micro-batches 0..deferred_-1)
  int next_weight_ = 0;  // ZB-H1: the micro-batch of the next W
  std::vector<Action> actions_;
};

}  // namespace

std::vector<Action> flow_compute_actions(const Schedule& header, int device) {
  return StageBuilder(header, device).build();
}

}  // namespace interplace::placement
