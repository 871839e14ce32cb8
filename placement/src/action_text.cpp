// The text forms of a schedule's actions (schedule.hpp): the compact one of logs and tests,
// which parse_action reads back, and the grid's labels.
#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/schedule.hpp"

namespace interplace::placement {
namespace {

// Each kind's word in the text form (to_string, parse_action) and letter in the grid.
struct KindText {
  ActionKind kind;
  std::string_view word;
  char letter;
};
constexpr KindText kKindTexts[] = {
    {ActionKind::forward, "fwd", 'F'},
    {ActionKind::backward, "bwd", 'B'},
    {ActionKind::backward_weight, "bwd-w", 'W'},
    {ActionKind::aux_forward, "aux-fwd", 'H'},
    {ActionKind::aux_backward, "aux-bwd", 'h'},
    {ActionKind::send, "send", 's'},
    {ActionKind::receive, "recv", 'r'},
    {ActionKind::optimizer_step, "step", 'S'},
    {ActionKind::forward_backward, "fwd-bwd", 'F'},
};

const KindText& text_of(ActionKind kind) {
  for (const KindText& t : kKindTexts) {
    if (t.kind == kind) return t;
  }
  throw_invalid("unknown action kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

Action forward_half(const Action& pair) {
  return {.kind = ActionKind::forward,
          .mini_batch = pair.mini_batch,
          .micro_batch = pair.micro_batch,
          .chunk = pair.chunk};
}

Action backward_half(const Action& pair) {
  return {.kind = ActionKind::backward,
          .mini_batch = pair.mini_batch,
          .micro_batch = pair.backward_micro_batch,
          .loss_stage = pair.loss_stage,
          .updates_parameters = pair.updates_parameters,
          .propagates_gradient = pair.propagates_gradient,
          .defers_parameters = pair.defers_parameters,
          .chunk = pair.backward_chunk};
}

Action overlapped(const Action& forward, const Action& backward) {
  if (forward.kind != ActionKind::forward || backward.kind != ActionKind::backward ||
      forward.mini_batch != backward.mini_batch || forward.node >= 0 || backward.node >= 0) {
    throw_invalid(
        "an overlapped pair is a stage-level forward and backward of one mini-batch, "
        "not '" +
        to_string(forward) + "' and '" + to_string(backward) + "'");
  }
  Action pair = backward;
  pair.kind = ActionKind::forward_backward;
  pair.micro_batch = forward.micro_batch;
  pair.chunk = forward.chunk;
  pair.backward_micro_batch = backward.micro_batch;
  pair.backward_chunk = backward.chunk;
  return pair;
}

std::vector<Action> compute_halves(const Action& action) {
  if (action.kind != ActionKind::forward_backward) return {action};
  return {forward_half(action), backward_half(action)};
}

std::string grid_label(const Action& action, int micro_batches) {
  if (action.kind == ActionKind::optimizer_step) return "S";
  if (action.kind == ActionKind::forward_backward) {
    return grid_label(forward_half(action), micro_batches) + "+" +
           grid_label(backward_half(action), micro_batches);
  }
  std::string m = std::to_string(action.mini_batch * micro_batches + action.micro_batch);
  if (action.chunk > 0) m.append("/").append(std::to_string(action.chunk));
  // A backward that leaves the parameters alone (interlocking's second flow) is lower case.
  const bool frozen = action.kind == ActionKind::backward && !action.updates_parameters;
  return std::string(1, frozen ? 'b' : text_of(action.kind).letter) + m;
}

std::string to_string(MessageLevel level) {
  return level == MessageLevel::stage ? "stage" : "node";
}

std::string to_string(const Action& action) {
  const std::string unit = std::to_string(action.mini_batch) + "." +
                           std::to_string(action.micro_batch) +
                           (action.node >= 0 ? " n" + std::to_string(action.node) : "") +
                           (action.chunk > 0 ? " c" + std::to_string(action.chunk) : "");
  const std::string what = action.payload == Payload::activation
                               ? std::string("act")
                               : "grad" + std::to_string(action.loss_stage);
  const std::string word(text_of(action.kind).word);
  switch (action.kind) {
    case ActionKind::forward_backward: {
      // "bwd 0.1 c1 loss7 upd" without its word: the backward's unit, chunk and flags.
      const std::string backward = to_string(backward_half(action));
      return word + " " + unit + " + " + backward.substr(backward.find(' ') + 1);
    }
    case ActionKind::backward:
      return word + " " + unit + " loss" + std::to_string(action.loss_stage) +
             (action.updates_parameters ? " upd" : "") +
             (action.propagates_gradient ? " prop" : "") +
             (action.defers_parameters ? " defer" : "");
    case ActionKind::send:
      return word + " " + what + ">" + std::to_string(action.peer_stage) + " " + unit;
    case ActionKind::receive:
      return word + " " + what + "<" + std::to_string(action.peer_stage) + " " + unit;
    case ActionKind::optimizer_step:
      return word + " " + std::to_string(action.mini_batch);
    default:
      return word + " " + unit;
  }
}

namespace {

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t space = text.find(' ', at);
    const size_t end = space == std::string_view::npos ? text.size() : space;
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// A whole non-negative decimal number, or -1.
int number(std::string_view text) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty() && value >= 0
             ? value
             : -1;
}

// A number after a fixed prefix ("loss3", "n12", "c1"), or -1.
int prefixed(std::string_view word, std::string_view prefix) {
  return word.starts_with(prefix) ? number(word.substr(prefix.size())) : -1;
}

}  // namespace

Action parse_action(std::string_view text) {
  const std::vector<std::string_view> w = words(text);
  const auto fail = [&text](const std::string& why) -> Action {
    throw_invalid("cannot read the action '" + std::string(text) + "': " + why +
                  ". HINT: write it as to_string prints one: 'fwd 0.1', 'send act>1 0.1', "
                  "'recv grad3<2 0.1 c1', 'bwd 0.1 loss3 upd prop', 'bwd-w 0.1', "
                  "'fwd-bwd 0.3 + 0.1 c1 loss3 upd prop', 'step 0'");
  };
  Action a;
  size_t at = 1;  // the next word
  const KindText* kind = nullptr;
  for (const KindText& t : kKindTexts) {
    if (t.word == w[0]) kind = &t;
  }
  if (kind == nullptr) return fail("unknown kind '" + std::string(w[0]) + "'");
  a.kind = kind->kind;
  if (a.kind == ActionKind::optimizer_step) {
    if (w.size() != 2 || (a.mini_batch = number(w[1])) < 0) {
      return fail("a step is 'step' and its mini-batch");
    }
    return a;
  }
  if (a.kind == ActionKind::send || a.kind == ActionKind::receive) {
    // "act>1" (send to stage 1), "grad3<2" (receive from stage 2 the gradient of loss 3).
    const std::string_view message = at < w.size() ? w[at++] : std::string_view();
    const size_t arrow = message.find(a.kind == ActionKind::send ? '>' : '<');
    if (arrow == std::string_view::npos) return fail("no peer stage after the payload");
    const std::string_view payload = message.substr(0, arrow);
    a.peer_stage = number(message.substr(arrow + 1));
    if (payload == "act") {
      a.payload = Payload::activation;
    } else if ((a.loss_stage = prefixed(payload, "grad")) >= 0) {
      a.payload = Payload::gradient;
    } else {
      return fail("the payload is 'act' or 'grad' and its loss stage");
    }
    if (a.peer_stage < 0) return fail("the peer stage is not a number");
  }
  // mini-batch.micro-batch
  const std::string_view unit = at < w.size() ? w[at++] : std::string_view();
  const size_t dot = unit.find('.');
  if (dot == std::string_view::npos || (a.mini_batch = number(unit.substr(0, dot))) < 0 ||
      (a.micro_batch = number(unit.substr(dot + 1))) < 0) {
    return fail("no mini-batch.micro-batch");
  }
  if (at < w.size() && w[at].starts_with("n")) {
    if ((a.node = prefixed(w[at++], "n")) < 0) return fail("the node is not a number");
  }
  if (at < w.size() && w[at].starts_with("c")) {
    if ((a.chunk = prefixed(w[at++], "c")) <= 0) return fail("the chunk is not a number > 0");
  }
  if (a.kind == ActionKind::forward_backward) {
    // "+ 0.1 [c1] loss7 ...": the backward half, read as the backward it is.
    if (at >= w.size() || w[at] != "+") return fail("an overlapped pair has '+' and its backward");
    std::string backward = "bwd";
    for (size_t i = at + 1; i < w.size(); ++i) backward.append(" ").append(w[i]);
    const Action half = parse_action(backward);
    if (half.mini_batch != a.mini_batch || half.node >= 0) {
      return fail("the backward half is of the same mini-batch and no node");
    }
    Action forward = a;
    forward.kind = ActionKind::forward;
    return overlapped(forward, half);
  }
  if (a.kind == ActionKind::backward) {
    if (at >= w.size() || (a.loss_stage = prefixed(w[at++], "loss")) < 0) {
      return fail("a backward names its loss stage ('loss3')");
    }
    for (const auto& [flag, member] : {std::pair{"upd", &Action::updates_parameters},
                                       std::pair{"prop", &Action::propagates_gradient},
                                       std::pair{"defer", &Action::defers_parameters}}) {
      if (at < w.size() && w[at] == flag) {
        a.*member = true;
        ++at;
      }
    }
  }
  if (at != w.size()) return fail("'" + std::string(w[at]) + "' is not expected there");
  return a;
}

}  // namespace interplace::placement
