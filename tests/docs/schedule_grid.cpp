// Prints a schedule of schedule.hpp as a rank x time grid, for docs/strategies.md: the
// real build_schedule, timed by the real simulator with unit costs, so the documented
// grids are what the simulator and the runtime execute (test_doc_examples.py checks them).
//
// Usage: schedule_grid STRATEGY STAGES MICRO_BATCHES [MINI_BATCHES]
//        [PIPELINE (gpipe, 1f1b, ...: pipelines.hpp)] [single|sum] [VIRTUAL_STAGES]
//
// Costs: forward 1, backward 1 (every pass), optimiser step 1; under a zero-bubble pipeline
// (zb-h1, interleaved-zb, zbv) a backward is split into B 1 and W 1, as in the zero-bubble
// paper's T_F = T_B = T_W; auxiliary heads
// and transfers 0, so each cell is one time unit and waiting shows as idle. Cells: F<m>
// forward of micro-batch m, B<m> a backward pass that updates the body (zb-h1: its input
// gradient), W<m> zb-h1's weight gradient, b<m> one that only passes the gradient on, S
// the optimiser step, `.` idle, `~` the action to its left goes on, `(F3 B1)` an
// overlapped pair (DualPipeV). Micro-batches are numbered across
// mini-batches (mini-batch b's m-th is b*M + m). Under interleaved-1f1b every chunk's
// forward and backward cost 1 (a chunk is a V-th of a device's layers: the time unit is
// a V-th of the other grids'), and "/c" marks the device's chunk c > 0 (F3/1).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "interplace/placement/schedule.hpp"
#include "interplace/placement/simulator.hpp"

namespace {

using namespace interplace::placement;

// The grid shows compute on the body only (heads and transfers are free at unit costs).
std::string label(const Action& action, int micro_batches) {
  switch (action.kind) {
    case ActionKind::forward:
    case ActionKind::backward:
    case ActionKind::backward_weight:
    case ActionKind::optimizer_step:
      return grid_label(action, micro_batches);
    default:
      return "";
  }
}

int run(int argc, char** argv) {
  if (argc < 4 || argc > 8) {
    std::fprintf(stderr,
                 "usage: schedule_grid STRATEGY STAGES MICRO_BATCHES [MINI_BATCHES] "
                 "[PIPELINE] [single|sum] [VIRTUAL_STAGES]\n");
    return 2;
  }
  ScheduleRequest request;
  request.strategy = argv[1];
  request.stage_count = std::stoi(argv[2]);
  request.micro_batches = std::stoi(argv[3]);
  request.mini_batches = argc > 4 ? std::stoi(argv[4]) : 1;
  request.pipeline = argc > 5 ? pipeline_by_name(argv[5]) : PipelineKind::one_f_one_b;
  request.interlock = argc > 6 ? interlock_mode_by_name(argv[6]) : InterlockMode::single;
  request.virtual_stages = argc > 7 ? std::stoi(argv[7]) : 1;
  const Schedule schedule = build_schedule(request);

  bool split_backward = false;
  for (const std::vector<Action>& actions : schedule.stage_actions) {
    for (const Action& a : actions) split_backward |= a.kind == ActionKind::backward_weight;
  }
  PipelineCosts costs;
  for (int k = 0; k < schedule.stage_count * schedule.virtual_stages; ++k) {
    StageCosts stage;
    stage.forward_s = 1.0;
    // Unit costs: a pass-through takes as long as any pass; a split backward's B and W
    // (zb-h1, interleaved-zb, zbv) 1 each.
    stage.backward_s = split_backward ? 2.0 : 1.0;
    stage.backward_input_s = 1.0;
    stage.optimizer_s = 1.0;
    costs.stages.push_back(stage);
  }
  costs.link = LinkSpec{0.0, INFINITY};
  const SimulationResult result = simulate(schedule, costs);

  const int slots = static_cast<int>(std::lround(result.makespan_s));
  std::vector<std::vector<std::string>> grid(schedule.stage_count,
                                             std::vector<std::string>(slots, "."));
  size_t width = 2;
  // A cell per time unit: the action's label where it starts, "~" where it goes on (a
  // whole backward of 2 units beside split ones); an overlapped pair's halves "(F3" and
  // "B1/1)" where each starts.
  const auto put = [&](int stage, double start_s, double end_s, const std::string& text) {
    const int from = static_cast<int>(std::lround(start_s));
    const int to = static_cast<int>(std::lround(end_s));
    for (int t = from; t < to; ++t) grid[stage][t] = t == from ? text : "~";
    width = std::max(width, text.size());
  };
  for (const TraceEvent& event : result.trace) {
    const Action& action = schedule.stage_actions[event.stage][event.action_index];
    if (event.end_s <= event.start_s) continue;  // messages, free aux heads
    if (action.kind == ActionKind::forward_backward) {
      put(event.stage, event.start_s, event.split_s,
          "(" + grid_label(forward_half(action), schedule.micro_batches));
      put(event.stage, event.split_s, event.end_s,
          grid_label(backward_half(action), schedule.micro_batches) + ")");
      continue;
    }
    const std::string text = label(action, schedule.micro_batches);
    if (!text.empty()) put(event.stage, event.start_s, event.end_s, text);
  }
  std::printf(
      "%s, reach %d, K=%d%s, M=%d, %d mini-batch%s, %s; time %d, idle %.0f%%\n",
      schedule.strategy.c_str(), schedule.reach, schedule.stage_count,
      schedule.virtual_stages > 1 ? (", V=" + std::to_string(schedule.virtual_stages)).c_str() : "",
      schedule.micro_batches, schedule.mini_batches, schedule.mini_batches == 1 ? "" : "es",
      schedule.reach == schedule.stage_count - 1
          ? to_string(schedule.pipeline).c_str()
          : ("interlock mode " + to_string(schedule.interlock)).c_str(),
      slots, 100.0 * result.idle_fraction);
  std::string heads;
  for (int k = 0; k < schedule.stage_count; ++k) {
    if (schedule.has_aux_head[k]) heads += (heads.empty() ? "" : ", ") + std::to_string(k);
  }
  std::printf("auxiliary heads on ranks: %s\n", heads.empty() ? "none" : heads.c_str());
  for (int k = 0; k < schedule.stage_count; ++k) {
    std::string row = "rank " + std::to_string(k) + ":";
    for (const std::string& cell : grid[k]) {
      row += " " + cell + std::string(width - cell.size(), ' ');
    }
    while (!row.empty() && row.back() == ' ') row.pop_back();
    std::printf("%s\n", row.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "schedule_grid: error: %s\n", error.what());
    return 2;
  }
}
