// Schedules as data: for each stage (device) of a K-stage chain, the list of actions it
// executes in order, for the global, local and interlocking strategies (docs/strategies.md).
// The simulator and the runtime both execute these lists.
//
// With reach d (local 0, pairwise 1, nwise:N N-1, global K-1; d >= K-1 is global):
// body k is trained by the loss of stage t = min(k+d, K-1). Gradients travel in flows:
//  - for d < K-1 and each t in [d, K-2], the auxiliary loss of stage t: backward through
//    stage t's head and body, then through stages t-1 .. t-d+1 (input gradients only:
//    these bodies are not trained by this loss) into stage t-d, whose body it updates;
//  - the network's own loss at stage K-1: backward through stages K-1 .. max(0, K-1-d),
//    updating every one of them (all are trained by it).
// A stage therefore runs one backward pass per flow that covers it; a pass through a
// body it does not update only computes the gradient for the previous stage. Auxiliary
// heads exist on every stage but the last (t in [0, K-2]) for local and interlocking
// strategies, as in the study's code: a head on t < d trains no body (its loss starts no
// flow) but itself, on its detached input, so its loss is measured and its cost is paid as
// there; global has none.
//
// Interlock mode `sum`: body k is trained by the sum of the losses of stages
// k .. min(k+d, K-1). Then every flow t in [0, K-2] runs from the auxiliary loss of stage t
// back to stage max(0, t-d), and every flow (also the network's own) updates every body it
// passes; heads exist on stages 0 .. K-2. For global (d = K-1) this adds every stage's
// auxiliary loss to the network's.
//
// Per mini-batch of M micro-batches, each stage runs per micro-batch a forward part
// (receive activation, forward, send activation, then aux forward/backward and its own
// loss's first backward pass if it is a flow's source) and a backward part (for each flow
// arriving from the next stage, nearest source first: receive gradient, backward, send
// gradient on), then one optimiser step. Order of the parts:
//  - global GPipe: all forward parts, then all backward parts (the last stage's own loss
//    pass moves to its backward part);
//  - otherwise (global 1F1B, local, interlocking): warm-up of D forward parts, then
//    alternately forward part m+D and backward part m, where D = min(M, the farthest
//    flow source arriving at this stage minus its index). For global this is 1F1B
//    (D = K-1-j); for local D = 0. Nobody waits for anything else, so a stage starts its
//    next mini-batch as soon as its own step is done: stages overlap across mini-batches.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace interplace::placement {

enum class ActionKind {
  forward,
  backward,
  aux_forward,
  aux_backward,
  send,
  receive,
  optimizer_step
};
enum class Payload { activation, gradient };
enum class PipelineKind { gpipe, one_f_one_b };
enum class InterlockMode { single, sum };

struct Action {
  ActionKind kind = ActionKind::forward;
  int mini_batch = 0;
  int micro_batch = 0;
  int peer_stage = -1;                    // send / receive: the other stage
  Payload payload = Payload::activation;  // send / receive
  int loss_stage = -1;  // backward, and gradient messages: the stage whose loss it carries
  bool updates_parameters = false;   // backward: accumulates the body's parameter gradients
  bool propagates_gradient = false;  // backward: computes the input gradient (sent on)

  bool operator==(const Action&) const = default;
};

// "global", "local", "pairwise", "nwise:N" (N >= 1) -> reach (global: K-1; N-1 clamped to
// K-1). Throws invalid_input for anything else, listing the valid forms.
int strategy_reach(std::string_view strategy, int stage_count);
// {"global", "local", "pairwise", "nwise:N"}: the forms strategy_reach accepts, for help
// texts and messages.
const std::vector<std::string>& strategy_forms();
// "gpipe" or "1f1b".
PipelineKind pipeline_by_name(std::string_view name);
const std::vector<std::string>& pipeline_names();
std::string to_string(PipelineKind kind);
// "single" or "sum".
InterlockMode interlock_mode_by_name(std::string_view name);
const std::vector<std::string>& interlock_mode_names();
std::string to_string(InterlockMode mode);

// Upper bounds of the request (the schedule holds every pass of every micro-batch).
inline constexpr int kMaxMicroBatches = 4096;
inline constexpr int kMaxMiniBatches = 1000;

struct ScheduleRequest {
  std::string strategy = "global";
  PipelineKind pipeline = PipelineKind::one_f_one_b;  // only global strategies use gpipe
  int stage_count = 1;
  int micro_batches = 1;  // per mini-batch
  int mini_batches = 1;   // run back to back
  InterlockMode interlock = InterlockMode::single;
};

struct Schedule {
  std::string strategy;
  int reach = 0;
  PipelineKind pipeline = PipelineKind::one_f_one_b;
  int stage_count = 0;
  int micro_batches = 0;
  int mini_batches = 0;
  InterlockMode interlock = InterlockMode::single;
  std::vector<bool> has_aux_head;                  // per stage
  std::vector<std::vector<Action>> stage_actions;  // per stage, in execution order
};

// Throws invalid_input for an unknown strategy, stage_count < 1, micro_batches outside
// 1..kMaxMicroBatches or mini_batches outside 1..kMaxMiniBatches.
Schedule build_schedule(const ScheduleRequest& request);

// Compact text, for logs and tests: "fwd 0.1", "send act>1 0.1", "recv grad3<2 0.1",
// "bwd 0.1 loss3 upd prop", "aux-fwd 0.1", "step 0" (mini-batch.micro-batch).
std::string to_string(const Action& action);

}  // namespace interplace::placement
