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
// Messages: a `send act>k` sends the micro-batch's boundary bundle, every tensor this
// stage produced that a later stage consumes (on a chain nearly always stage k; a tensor
// that skips stages goes straight to its consumer in the same bundle); a `recv act<k`
// receives every tensor of earlier stages this stage consumes. Gradients likewise, in
// reverse: `send grad>k` sends the gradients of every tensor of an earlier stage this
// stage consumed, `recv grad<k` receives those of every tensor this stage sent.
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
//  - global ZB-H1 (zero bubble, Qi et al., ICLR 2024, their handcrafted ZB-H1): 1F1B's
//    order, with every backward split into B, the input gradient (a backward action with
//    defers_parameters, sent on at once), and W, the parameter gradients of that
//    micro-batch (a backward_weight action). Stage j runs W(m - j) right after B(m) and
//    the W's still due after its last B, before the optimiser step: the last stages put
//    their W's off the most, so B's reach stage 0 sooner, and the W's fill the bubble at
//    the tail. At T_F = T_B = T_W and zero link cost every stage idles
//    (K-1)(T_F + T_B - T_W) per mini-batch (M >= K), against 1F1B's (K-1)(T_F + T_B + T_W).
//    Stage j holds at most min(M, K-j) micro-batches between F and B, as 1F1B, and
//    min(M, K) between F and W (the ones past B keep only what W needs in the paper's
//    accounting: peak memory K M_B, 1F1B's, on stage 0).
//  - global interleaved 1F1B (Narayanan et al., SC 2021, Megatron-LM's interleaved
//    schedule): the model is cut into K*V stages and device j holds the V stages
//    j, j + K, .., j + (V-1)K (its chunks 0..V-1). The action lists stay per device
//    (stage_actions[j], stage_count = K, virtual_stages = V); every action names its chunk
//    (Action::chunk) and every stage number in an action (peer_stage, loss_stage) is a
//    model stage, c*K + j, so that a message's key is its boundary. Device j runs the
//    M*V chunk passes in Megatron's order: forwards in groups of K micro-batches, chunk 0's
//    group, then chunk 1's, .., chunk V-1's, then the next group (forward n: chunk
//    (n mod KV) / K, micro-batch (n / KV) K + n mod K); backwards in the same order with
//    the chunks reversed. Warm-up of W_j = min(MV, (V-1)K + K-1-j) forwards, then
//    alternately forward n + W_j and backward n, then the backwards left. V = 1 is 1F1B
//    (W_j = K-1-j); Megatron-LM's code warms up 2(K-1-j) + (V-1)K, more than non-blocking
//    sends need for the same bubble. With V > 1, M must be a multiple of K (Megatron's
//    requirement: a chunk's group of K micro-batches returns to device 0 just as its next
//    chunk needs it). At unit costs
//    (a chunk's F and B each 1, zero link cost) every device idles (K-1) * 2 per mini-batch
//    against M*V*2 busy: bubble fraction (K-1)/(VM + K-1), the paper's (K-1)/(VM) of the
//    ideal time. Device 0 keeps the most micro-batch chunks between F and B:
//    min(MV, (V-1)K + K) = min(MV, VK), each a 1/V-th of the device's layers: V K / V = K
//    micro-batches' worth of a whole device's activations, 1F1B's K.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/placement.hpp"

namespace interplace::placement {

enum class ActionKind {
  forward,
  backward,
  aux_forward,
  aux_backward,
  send,
  receive,
  optimizer_step,
  backward_weight,  // a zero-bubble W: the parameter gradients a deferring backward left
  // DualPipeV's overlapped pair (PyTorch's OVERLAP_F_B), one action: the forward of
  // (micro_batch, chunk) and a backward of (backward_micro_batch, backward_chunk), whose
  // loss_stage and flags are the backward's. Roughly: both halves' receives, then
  // forward(F half); backward(B half), then both halves' sends (forward_half/backward_half).
  forward_backward
};
enum class Payload { activation, gradient };
// What an action moves and computes: a stage's whole part of a micro-batch and its boundary
// bundle (stage chains), or one node and one tensor (node_level_schedule: a placement that
// is not a chain, where whole-stage passes and messages could deadlock).
enum class MessageLevel { stage, node };
std::string to_string(MessageLevel level);  // "stage" or "node"
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
  // backward that updates: ZB-H1's B, computing the input gradient only; the micro-batch's
  // backward_weight action on this stage computes the parameter gradients later.
  bool defers_parameters = false;
  int node = -1;  // forward / backward of a node-level schedule: the graph node; else -1
  // Interleaved 1F1B: which of the device's V chunks (model stage chunk * K + device) the
  // action runs; 0 for every other schedule (one chunk per device). The optimiser step
  // steps all of them, chunk 0.
  int chunk = 0;
  // forward_backward: the backward half's micro-batch and chunk (the forward half's are
  // micro_batch and chunk); -1 and 0 for every other kind.
  int backward_micro_batch = -1;
  int backward_chunk = 0;

  bool operator==(const Action&) const = default;
};

// The two halves of a forward_backward action, each as the action it would be alone; and
// the pair of a forward and a backward of the same mini-batch (invalid_input otherwise).
Action forward_half(const Action& pair);
Action backward_half(const Action& pair);
Action overlapped(const Action& forward, const Action& backward);
// The compute actions an action stands for: its two halves for a forward_backward, else
// the action itself (what the simulator, the runtime and the memory rules walk).
std::vector<Action> compute_halves(const Action& action);

enum class StrategyKind { global, local, pairwise, nwise };

// A backprop strategy, parsed: "global", "local", "pairwise", "nwise:N" (N >= 1).
struct Strategy {
  StrategyKind kind = StrategyKind::global;
  int n = 0;  // nwise: the N of nwise:N; 0 otherwise

  Strategy() = default;
  Strategy(StrategyKind kind_, int n_ = 0);
  // Parse the name (throws invalid_input, listing the valid forms). Not explicit, so that a
  // request written with a name (`{.strategy = "local"}`) is parsed where it is written.
  Strategy(std::string_view name);
  Strategy(const char* name) : Strategy(std::string_view(name)) {}
  Strategy(const std::string& name) : Strategy(std::string_view(name)) {}

  bool operator==(const Strategy&) const = default;
};
std::string to_string(const Strategy& strategy);  // the name it was parsed from

// Gradient reach on `stage_count` stages: global K-1, local 0, pairwise 1, nwise:N N-1,
// clamped to K-1. Throws invalid_input for stage_count < 1.
int strategy_reach(const Strategy& strategy, int stage_count);
// {"global", "local", "pairwise", "nwise:N"}: the forms strategy_reach accepts, for help
// texts and messages.
const std::vector<std::string>& strategy_forms();
// "single" or "sum".
InterlockMode interlock_mode_by_name(std::string_view name);
const std::vector<std::string>& interlock_mode_names();
std::string to_string(InterlockMode mode);

// Upper bounds of the request (the schedule holds every pass of every micro-batch).
inline constexpr int kMaxMicroBatches = 4096;
inline constexpr int kMaxMiniBatches = 1000;
inline constexpr int kMaxVirtualStages = 64;

struct ScheduleRequest {
  Strategy strategy = {};
  // As the registry's row allows for the strategy (plan_pipeline, pipelines.hpp): a
  // non-global strategy runs 1f1b for gpipe and is refused the others but 1f1b.
  PipelineKind pipeline = PipelineKind::one_f_one_b;
  int stage_count = 1;  // devices: action lists
  // Chunks per device of a pipeline that takes virtual stages (the model has
  // stage_count * virtual_stages stages); 1 for every other pipeline.
  int virtual_stages = 1;
  int micro_batches = 1;  // per mini-batch
  int mini_batches = 1;   // run back to back
  InterlockMode interlock = InterlockMode::single;
};

struct Schedule {
  std::string strategy;
  int reach = 0;
  PipelineKind pipeline = PipelineKind::one_f_one_b;
  int stage_count = 0;     // devices, one action list each
  int virtual_stages = 1;  // chunks per device (interleaved 1F1B); model stages K * V
  int micro_batches = 0;
  int mini_batches = 0;
  InterlockMode interlock = InterlockMode::single;
  StageMap stage_map = StageMap::loop;  // which device runs model stage s (pipelines.hpp)
  MessageLevel messages = MessageLevel::stage;
  std::vector<bool> has_aux_head;                  // per stage
  std::vector<std::vector<Action>> stage_actions;  // per stage, in execution order

  // The model stage of device j's chunk c, and the device of model stage s (a message's
  // peer_stage is a model stage).
  int stage_of(int device, int chunk) const {
    return stage_of_chunk(stage_map, device, chunk, stage_count);
  }
  int device_of_stage(int stage) const {
    return placement::device_of_stage(stage_map, stage, stage_count);
  }
};

// The pipeline's compute-only lists (pipeline_registry's builder) for each mini-batch, an
// optimiser step after each, and the messages added in one pass: before a forward of model
// stage s > 0 `recv act<s-1`, after it `send act>s+1` unless s is the last; before a
// backward of a loss of a later stage `recv grad<s+1`, after a backward that propagates
// `send grad>s-1`. Throws invalid_input for an unknown strategy, stage_count < 1,
// mini_batches outside 1..kMaxMiniBatches, and whatever plan_pipeline refuses.
Schedule build_schedule(const ScheduleRequest& request);

// One task of a node-level schedule: the forward or backward of one node for one micro-batch.
struct NodeTask {
  int node = 0;
  int micro_batch = 0;
  bool backward = false;
};

// For the global strategy on a placement that is not a stage chain: per device, its node
// tasks in the order given (per mini-batch; step_estimate.hpp's list_schedule_tasks gives
// the ready-first list schedule), then the optimiser step, with a message per tensor that
// crosses devices (MessageLevel::node: `node` names the tensor's producer):
//  - after F(v, m), `send act>d` of v's output to each other device d that consumes it
//    (ascending d); before the first forward on d that takes it, `recv act<s` from v's
//    device s;
//  - before B(v, m), `recv grad<d` of the gradient of v's output from each other device
//    d that consumes it (ascending d); on d, after the last backward there of a consumer
//    of v (in d's list), `send grad>s` of the sum of their gradients for v. The data
//    (`input` nodes) gets no gradient.
// Every backward belongs to the network's loss (loss stage K-1), updates and propagates.
// The request's pipeline must be gpipe (a synchronous flush per mini-batch; 1F1B
// interleaves whole-stage passes and has no such form). Throws invalid_input like
// build_schedule, or when device_tasks has not one list per device of the placement or a
// task is of a node on another device.
// Example (a chain of nodes 0 -> 1 -> 2 on devices 0, 1, 0; one micro-batch), device 0:
//   fwd 0.0 n0; send act>1 0.0 n0; recv act<1 0.0 n1; fwd 0.0 n2; bwd 0.0 n2 loss1 upd prop;
//   send grad1>1 0.0 n1; recv grad1<1 0.0 n0; bwd 0.0 n0 loss1 upd prop; step 0
// device 1:
//   recv act<0 0.0 n0; fwd 0.0 n1; send act>0 0.0 n1; recv grad1<0 0.0 n1;
//   bwd 0.0 n1 loss1 upd prop; send grad1>0 0.0 n0; step 0
Schedule node_level_schedule(const ScheduleRequest& request,
                             const std::vector<std::vector<NodeTask>>& device_tasks,
                             const Graph& graph, const Placement& placement);

// Compact text, for logs and tests: "fwd 0.1", "send act>1 0.1", "recv grad3<2 0.1",
// "bwd 0.1 loss3 upd prop", "bwd 0.1 loss3 upd prop defer" (ZB-H1's B), "bwd-w 0.1"
// (its W), "aux-fwd 0.1", "step 0" (mini-batch.micro-batch); " c1" after an action of
// chunk 1 (interleaved 1F1B); "fwd-bwd 0.3 c1 + 0.1 loss7 upd prop" an overlapped pair
// (the forward's unit and chunk, "+", the backward's unit, chunk and flags).
// The action in a step x rank grid and on timelines: "F3" forward of micro-batch 3 (numbered
// across mini-batches: mini_batch * micro_batches + micro_batch), "B3" a backward pass that
// updates the body (under ZB-H1 its input-gradient pass B), "W3" ZB-H1's weight-gradient
// pass, "b3" a backward that only passes the gradient on, "H3"/"h3" the auxiliary head's
// forward/backward, "s3"/"r3" a send/receive, "S" the optimiser step; "/1" after an action
// of the device's chunk 1 (interleaved 1F1B: "F3/1"), nothing for chunk 0; an overlapped
// pair its halves joined by "+" ("F3+B1/1").
std::string grid_label(const Action& action, int micro_batches);
std::string to_string(const Action& action);
// The action to_string printed (every field it has: the two round-trip); invalid_input,
// with the form expected, for any other text.
Action parse_action(std::string_view text);

}  // namespace interplace::placement
