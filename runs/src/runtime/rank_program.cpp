#include "runtime/rank_program.hpp"

#include "interplace/placement/schedule.hpp"
#include "interplace/placement/stage_chain.hpp"

namespace interplace::runs {

using Kind = ProgramStep::Kind;

namespace {

// Marks on each micro-batch's last step that its saved state may go.
RankProgram with_releases(RankProgram program) {
  std::vector<int> last;  // step index by micro-batch
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& s = program.steps[i];
    if (s.kind == Kind::optimizer) continue;
    const auto m = static_cast<size_t>(s.pass.micro_batch);
    if (last.size() <= m) last.resize(m + 1, -1);
    last[m] = static_cast<int>(i);
  }
  for (size_t m = 0; m < last.size(); ++m) {
    if (last[m] >= 0)
      program.steps[static_cast<size_t>(last[m])].release.push_back(static_cast<int>(m));
  }
  return program;
}

RankProgram build_program(const TrainPlan& plan, int rank) {
  const TrainConfig& c = plan.config;
  const int k = c.devices;
  const bool global = plan.reach == k - 1;
  RankProgram program;
  program.stages_with_head.assign(static_cast<size_t>(k), false);
  if (!placement::is_stage_chain(plan.graph, plan.placement)) {
    for (int m = 0; m < c.micro_batches; ++m) program.steps.push_back({Kind::forward, {m}});
    for (int m = 0; m < c.micro_batches; ++m) {
      program.steps.push_back({Kind::backward, {.micro_batch = m, .loss_stage = -1}});
    }
    program.steps.push_back({Kind::optimizer, {}});
    return program;
  }
  placement::ScheduleRequest request;
  request.strategy = c.strategy;
  request.pipeline = global ? config_pipeline(c) : placement::PipelineKind::one_f_one_b;
  request.interlock = placement::interlock_mode_by_name(c.interlock_mode);
  request.stage_count = k;
  request.micro_batches = c.micro_batches;
  const placement::Schedule schedule = placement::build_schedule(request);
  program.stages_with_head = schedule.has_aux_head;
  program.has_aux_head = schedule.has_aux_head[static_cast<size_t>(rank)];
  for (const placement::Action& a : schedule.stage_actions[static_cast<size_t>(rank)]) {
    const int m = a.micro_batch;
    switch (a.kind) {
      case placement::ActionKind::forward:
        program.steps.push_back({Kind::forward, {m}});
        break;
      case placement::ActionKind::aux_forward:
        program.steps.push_back({Kind::aux_forward, {m}});
        break;
      case placement::ActionKind::aux_backward:
        program.steps.push_back({Kind::aux_backward, {m}});
        break;
      case placement::ActionKind::backward:
        program.steps.push_back({Kind::backward,
                                 {.micro_batch = m,
                                  .loss_stage = global ? -1 : a.loss_stage,
                                  .updates = a.updates_parameters,
                                  .propagates = a.propagates_gradient}});
        break;
      case placement::ActionKind::optimizer_step:
        program.steps.push_back({Kind::optimizer, {}});
        break;
      case placement::ActionKind::send:
      case placement::ActionKind::receive:
        break;  // messages move at node level, when produced and when first needed
    }
  }
  return program;
}

}  // namespace

RankProgram rank_program(const TrainPlan& plan, int rank) {
  return with_releases(build_program(plan, rank));
}

}  // namespace interplace::runs
