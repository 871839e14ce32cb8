#include "runtime/rank_program.hpp"

#include <map>
#include <utility>

#include "interplace/kernels/error.hpp"

namespace interplace::runs {

using placement::Action;
using placement::ActionKind;

RankProgram rank_program(const TrainPlan& plan, int rank) {
  const placement::Schedule& schedule = plan.schedule;
  if (rank < 0 || rank >= schedule.stage_count) {
    throw_invalid("rank " + std::to_string(rank) + " has no actions in a schedule of " +
                  std::to_string(schedule.stage_count) + " stages");
  }
  RankProgram program;
  program.actions = schedule.stage_actions[static_cast<size_t>(rank)];
  program.stages_with_head = schedule.has_aux_head;
  program.has_aux_head = schedule.has_aux_head[static_cast<size_t>(rank)];
  // The runtime runs one mini-batch per step: micro-batch numbers identify the state.
  std::vector<int> last;  // action index by micro-batch
  // An overlapped pair stands for its two halves (two micro-batches, maybe two chunks).
  for (size_t i = 0; i < program.actions.size(); ++i) {
    if (program.actions[i].kind == ActionKind::optimizer_step) continue;
    for (const Action& a : placement::compute_halves(program.actions[i])) {
      const auto m = static_cast<size_t>(a.micro_batch);
      if (last.size() <= m) last.resize(m + 1, -1);
      last[m] = static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < program.actions.size(); ++i) {
    for (const Action& a : placement::compute_halves(program.actions[i])) {
      const bool computes_gradients =
          (a.kind == ActionKind::backward && a.updates_parameters && !a.defers_parameters) ||
          a.kind == ActionKind::backward_weight || a.kind == ActionKind::aux_backward;
      if (computes_gradients) program.gradients_final_after = static_cast<int>(i);
      if (a.kind == ActionKind::optimizer_step) program.optimizer_step_at = static_cast<int>(i);
    }
  }
  program.release.resize(program.actions.size());
  for (size_t m = 0; m < last.size(); ++m) {
    if (last[m] >= 0) program.release[static_cast<size_t>(last[m])].push_back(static_cast<int>(m));
  }
  program.release_chunk.resize(program.actions.size());
  if (schedule.virtual_stages > 1) {
    std::map<std::pair<int, int>, size_t> last_of_chunk;  // (micro-batch, chunk) -> action
    for (size_t i = 0; i < program.actions.size(); ++i) {
      if (program.actions[i].kind == ActionKind::optimizer_step) continue;
      for (const Action& a : placement::compute_halves(program.actions[i])) {
        last_of_chunk[{a.micro_batch, a.chunk}] = i;
      }
    }
    for (const auto& [unit, i] : last_of_chunk) {
      if (static_cast<int>(i) != last[static_cast<size_t>(unit.first)]) {
        program.release_chunk[i].push_back(unit);
      }
    }
  }
  return program;
}

std::vector<Action> forward_only_actions(const RankProgram& program) {
  std::vector<Action> out;
  for (const Action& a : program.actions) {
    if (a.mini_batch != 0 || a.micro_batch != 0) continue;
    const bool activation_message = (a.kind == ActionKind::send || a.kind == ActionKind::receive) &&
                                    a.payload == placement::Payload::activation;
    if (a.kind == ActionKind::forward || activation_message) out.push_back(a);
    if (a.kind == ActionKind::forward_backward) out.push_back(placement::forward_half(a));
  }
  return out;
}

}  // namespace interplace::runs
