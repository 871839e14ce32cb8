#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/random.hpp"
#include "interplace/placement/graph_groups.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/rl_placer.hpp"
#include "interplace/placement/step_estimate.hpp"

namespace interplace::placement {
namespace {

void check_log_prob_gradient(RlPolicy policy);

// With and without candidate features (the shared weights `a` after b2).
TEST(RlPolicy, LogProbGradientMatchesFiniteDifferences) {
  for (int candidates : {0, 2}) {
    SCOPED_TRACE(std::to_string(candidates) + " candidate features");
    check_log_prob_gradient(RlPolicy(7, 5, 3, 11, candidates));
  }
}

void check_log_prob_gradient(RlPolicy policy) {
  kernels::Rng rng(3);
  std::vector<double> z(static_cast<size_t>(policy.input_size()));
  for (double& v : z) v = rng.uniform(-1.0f, 1.0f);
  // Non-zero biases so that their gradients are exercised away from the initial point.
  for (double& p : policy.parameters()) p += 0.1 * rng.uniform(-1.0f, 1.0f);
  for (int action = 0; action < 3; ++action) {
    std::vector<double> analytic(static_cast<size_t>(policy.parameter_count()), 0.0);
    policy.log_prob_gradient(z, action, 1.0, analytic);
    for (int i = 0; i < policy.parameter_count(); ++i) {
      double& p = policy.parameters()[static_cast<size_t>(i)];
      const double saved = p;
      const double h = 1e-6;
      p = saved + h;
      const double up = policy.log_prob(z, action);
      p = saved - h;
      const double down = policy.log_prob(z, action);
      p = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic[static_cast<size_t>(i)], numeric, 1e-7 + 1e-5 * std::abs(numeric))
          << "parameter " << i << ", action " << action;
    }
  }
}

TEST(RlPolicy, EntropyGradientMatchesFiniteDifferences) {
  RlPolicy policy(6, 4, 3, 17, 3);
  kernels::Rng rng(8);
  std::vector<double> z(static_cast<size_t>(policy.input_size()));
  for (double& p : policy.parameters()) p += 0.1 * rng.uniform(-1.0f, 1.0f);
  for (double& v : z) v = rng.uniform(-2.0f, 2.0f);
  std::vector<double> analytic(static_cast<size_t>(policy.parameter_count()), 0.0);
  policy.entropy_gradient(z, 1.0, analytic);
  for (int i = 0; i < policy.parameter_count(); ++i) {
    double& p = policy.parameters()[static_cast<size_t>(i)];
    const double saved = p;
    const double h = 1e-6;
    p = saved + h;
    const double up = policy.entropy(z);
    p = saved - h;
    const double down = policy.entropy(z);
    p = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic[static_cast<size_t>(i)], numeric, 1e-7 + 1e-5 * std::abs(numeric))
        << "parameter " << i;
  }
}

TEST(RlPolicy, ProbabilitiesAreASoftmax) {
  RlPolicy policy(4, 3, 5, 1);
  const std::vector<double> p = policy.probabilities(std::vector<double>{1, 0, -1, 0.5});
  double total = 0.0;
  for (double v : p) {
    EXPECT_GT(v, 0.0);
    total += v;
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_THROW(policy.probabilities(std::vector<double>{1, 2}), Error);
}

// The candidate weights are shared by the devices: a device whose candidate features are
// larger (with a positive weight) gets the larger probability, whichever device it is.
TEST(RlPolicy, CandidateWeightsAreSharedByTheDevices) {
  RlPolicy policy(2, 3, 3, 5, 1);
  for (double& p : policy.parameters()) p = 0.0;  // logits from the candidates alone
  policy.parameters().back() = 2.0;
  for (int favoured = 0; favoured < 3; ++favoured) {
    std::vector<double> z = {0.5, -0.5, 0.0, 0.0, 0.0};
    z[static_cast<size_t>(2 + favoured)] = 1.0;
    const std::vector<double> p = policy.probabilities(z);
    const double e2 = std::exp(2.0);
    EXPECT_NEAR(p[static_cast<size_t>(favoured)], e2 / (e2 + 2.0), 1e-12);
  }
}

// Placeto's policy and MDP (the placer's defaults before the lookahead features), trained
// long: the settings the tests of the learning machinery were written for.
PlacementRequest rl_request(const CostModel& cost_model, int devices, uint64_t seed) {
  PlacementRequest request{.device_count = devices, .cost_model = cost_model};
  request.seed = seed;
  request.rl.features = RlFeatures::placeto;
  request.rl.episode_start = RlEpisodeStart::start;
  request.rl.discount = 1.0;
  request.rl.episodes = 600;
  request.rl.learning_rate = 3e-3;
  request.rl.final_learning_rate = 3e-4;
  request.rl.entropy_weight = 0.03;
  return request;
}

// Two independent chains of four equal nodes on two devices, with a slow link: the
// optimum keeps each chain on its own device, 4 x (1 + 1) s = 8 s.
TEST(RlPlacer, LearnsToSeparateTwoIndependentChains) {
  const Graph graph = testing::graph_from_inputs({{}, {0}, {1}, {2}, {}, {4}, {5}, {6}});
  const std::vector<double> one(8, 1.0);
  const CostModel cost_model = testing::timed_cost_model(graph, one, one, {0.5, 1e15});
  const Order order = topological_order(graph);
  const double optimum_s = 8.0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PlacementRequest request = rl_request(cost_model, 2, seed);
    RlTrainingLog log;
    request.rl_log = &log;
    const Placement placement = place_rl(graph, order, request);
    const double step_s =
        estimate_step_time_s(graph, cost_model.node_costs(graph), cost_model.link(), placement);
    EXPECT_LE(step_s, 1.05 * optimum_s) << "seed " << seed;
    // The trained policy itself, not only the best placement seen while exploring.
    EXPECT_LE(log.greedy_step_time_s, 1.05 * optimum_s) << "seed " << seed;
    EXPECT_GT(log.start_step_time_s, 1.05 * optimum_s) << "seed " << seed << ": random start";
    EXPECT_EQ(log.episodes_run, 600);
    EXPECT_EQ(log.episode_step_time_s.size(), 600U);
  }
}

// A chain of unequal nodes pipelined over 4 micro-batches on 2 devices: the best placement
// is a contiguous split, which the contiguous placer's DP finds.
TEST(RlPlacer, ReachesTheContiguousSplitOfAPipelinedChain) {
  const Graph graph = testing::chain(8);
  const std::vector<double> forward = {1, 3, 1, 2, 2, 1, 3, 1};
  const CostModel cost_model = testing::timed_cost_model(graph, forward, forward, {0.01, 1e15});
  const Order order = topological_order(graph);
  PlacementRequest request = rl_request(cost_model, 2, 5);
  request.micro_batches = 4;
  RlTrainingLog log;
  request.rl_log = &log;
  const NodeCosts costs = cost_model.node_costs(graph);
  const double contiguous_s = estimate_step_time_s(graph, costs, cost_model.link(),
                                                   place_contiguous(graph, order, request), 4);
  const Placement placement = place_rl(graph, order, request);
  EXPECT_LE(estimate_step_time_s(graph, costs, cost_model.link(), placement, 4),
            1.05 * contiguous_s);
  EXPECT_LE(log.greedy_step_time_s, 1.05 * contiguous_s);
}

TEST(RlPlacer, SameSeedSamePlacementAndCurve) {
  const Graph graph = testing::random_dag(25, 0.15, 9, 3);
  const CostModel cost_model = testing::timed_cost_model(graph, std::vector<double>(25, 1.0),
                                                         std::vector<double>(25, 2.0), {0.2, 1e9});
  const Order order = compute_order(graph, OrderKind::topo_lifo);
  auto run = [&](uint64_t seed, RlTrainingLog& log) {
    PlacementRequest request = rl_request(cost_model, 3, seed);
    request.rl.episodes = 600;
    request.rl_log = &log;
    return place_rl(graph, order, request);
  };
  RlTrainingLog a, b, c;
  const Placement first = run(4, a);
  EXPECT_EQ(first.device_of_node, run(4, b).device_of_node);
  EXPECT_EQ(a.episode_step_time_s, b.episode_step_time_s);
  run(5, c);
  EXPECT_NE(a.episode_step_time_s, c.episode_step_time_s);  // the seed matters
}

// A chain with a free link, where one device would be fastest, but each device holds
// only three nodes (136 bytes each: parameter state and one activation): the returned
// placement must fit, whatever the penalised episodes explored.
TEST(RlPlacer, RespectsMemoryAndTheTimeBudget) {
  constexpr int64_t kNodeBytes = 136;
  const Graph graph = testing::chain(6);
  const std::vector<double> one(6, 1.0);
  const CostModel cost_model = testing::timed_cost_model(graph, one, one, {}, 3 * kNodeBytes);
  const Order order = topological_order(graph);
  for (uint64_t seed : {1, 2}) {
    const Placement placement = place_rl(graph, order, rl_request(cost_model, 2, seed));
    const std::vector<int> counts = device_node_counts(placement);
    EXPECT_LE(counts[0], 3) << "seed " << seed;
    EXPECT_LE(counts[1], 3) << "seed " << seed;
  }
  PlacementRequest request = rl_request(cost_model, 2, 1);
  request.rl.time_budget_s = 1e-12;
  RlTrainingLog log;
  request.rl_log = &log;
  place_rl(graph, order, request);
  EXPECT_LT(log.episodes_run, request.rl.episodes);
}

TEST(RlPlacer, BadOptionsFailClearly) {
  const Graph graph = testing::chain(4);
  const std::vector<double> one(4, 1.0);
  const CostModel cost_model = testing::timed_cost_model(graph, one, one);
  const Order order = topological_order(graph);
  auto expect_bad = [&](auto change, const char* what) {
    PlacementRequest request = rl_request(cost_model, 2, 1);
    change(request.rl);
    try {
      place_rl(graph, order, request);
      ADD_FAILURE() << "accepted bad " << what;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
      EXPECT_NE(std::string(error.what()).find(what), std::string::npos) << error.what();
    }
  };
  expect_bad([](RlOptions& o) { o.episodes = 0; }, "episodes");
  expect_bad([](RlOptions& o) { o.rounds = -1; }, "rounds");
  expect_bad([](RlOptions& o) { o.hidden = 0; }, "hidden");
  expect_bad([](RlOptions& o) { o.learning_rate = 0.0; }, "learning_rate");
  expect_bad([](RlOptions& o) { o.final_learning_rate = std::nan(""); }, "final_learning_rate");
  expect_bad([](RlOptions& o) { o.time_budget_s = -1.0; }, "time_budget_s");
  expect_bad([](RlOptions& o) { o.memory_penalty = -1.0; }, "memory_penalty");
  expect_bad([](RlOptions& o) { o.baseline_window = 0; }, "baseline_window");
  expect_bad([](RlOptions& o) { o.entropy_weight = -0.5; }, "entropy_weight");
  expect_bad([](RlOptions& o) { o.start = "rl"; }, "start");
  expect_bad([](RlOptions& o) { o.start = "nonsense"; }, "nonsense");
  expect_bad([](RlOptions& o) { o.eval_every = 1; }, "eval_every");
  expect_bad([](RlOptions& o) { o.eval_every = -5; }, "eval_every");
  expect_bad([](RlOptions& o) { o.clip_norm = -1.0; }, "clip_norm");
  expect_bad([](RlOptions& o) { o.clip_norm = INFINITY; }, "clip_norm");
  expect_bad([](RlOptions& o) { o.fine_episodes = -1; }, "fine_episodes");
  expect_bad([](RlOptions& o) { o.fine_factor = 1.0; }, "fine_factor");
  expect_bad([](RlOptions& o) { o.fine_factor = std::nan(""); }, "fine_factor");
  expect_bad([](RlOptions& o) { o.fine_factor = 1e12; }, "fine_factor");
  EXPECT_EQ(placer_by_name("rl")(graph, order, rl_request(cost_model, 2, 1)).device_count, 2);
}

TEST(RlOptionNames, RoundTripAndUnknownNamesListTheValidOnes) {
  for (const std::string& name : rl_reward_names())
    EXPECT_EQ(to_string(rl_reward_by_name(name)), name);
  for (const std::string& name : rl_baseline_names()) {
    EXPECT_EQ(to_string(rl_baseline_by_name(name)), name);
  }
  for (const std::string& name : rl_episode_start_names()) {
    EXPECT_EQ(to_string(rl_episode_start_by_name(name)), name);
  }
  for (const std::string& name : rl_entropy_schedule_names()) {
    EXPECT_EQ(to_string(rl_entropy_schedule_by_name(name)), name);
  }
  EXPECT_EQ(rl_reward_by_name("log"), RlReward::log_runtime);
  EXPECT_EQ(rl_baseline_by_name("all-so-far"), RlBaseline::all_so_far);
  try {
    rl_reward_by_name("lgo");
    ADD_FAILURE() << "accepted reward 'lgo'";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(error.what()).find("'lgo' (valid: start-relative, log, log-study-sign)"),
              std::string::npos)
        << error.what();
  }
}

// Placeto's reward is the decrease of the log-runtime; the study's code flips its sign.
TEST(RlPlacer, MoveRewardsAndTheirSigns) {
  EXPECT_DOUBLE_EQ(rl_move_reward(RlReward::start_relative, 3.0, 2.0, 4.0), 0.25);
  EXPECT_DOUBLE_EQ(rl_move_reward(RlReward::log_runtime, 3.0, 2.0, 4.0), std::log(1.5));
  EXPECT_DOUBLE_EQ(rl_move_reward(RlReward::log_runtime_study_sign, 3.0, 2.0, 4.0), -std::log(1.5));
  // A faster placement is rewarded with Placeto's sign, whatever the start.
  EXPECT_GT(rl_move_reward(RlReward::log_runtime, 10.0, 9.0, 1.0), 0.0);
}

// A 20-node DAG on 3 devices and a policy trained on it briefly, to start the tests below
// from the same parameters.
struct TrainedFixture {
  Graph graph = testing::random_dag(20, 0.15, 4, 3);
  CostModel cost_model = testing::timed_cost_model(graph, std::vector<double>(20, 1.0),
                                                   std::vector<double>(20, 2.0), {0.2, 1e9});
  Order order = topological_order(graph);
  RlSavedPolicy policy;
  TrainedFixture() {
    PlacementRequest request = rl_request(cost_model, 3, 7);
    request.rl.episodes = 5;
    RlTrainingLog log;
    request.rl_log = &log;
    place_rl(graph, order, request);
    policy = log.policy;
  }
  RlTrainingLog run(const std::function<void(RlOptions&)>& change) const {
    PlacementRequest request = rl_request(cost_model, 3, 3);
    request.rl.initial = policy;
    request.rl.entropy_weight = 0.0;
    change(request.rl);
    RlTrainingLog log;
    request.rl_log = &log;
    place_rl(graph, order, request);
    return log;
  }
};

// With the baseline over every training episode including the current one, the only
// episode's advantages are all 0: without entropy, its update leaves the policy as it was.
// The recent-episodes baseline (empty at the first episode) moves it.
TEST(RlPlacer, AllSoFarBaselineIncludesTheCurrentEpisode) {
  const TrainedFixture fixture;
  const RlTrainingLog all = fixture.run([](RlOptions& o) {
    o.episodes = 1;
    o.baseline = RlBaseline::all_so_far;
  });
  EXPECT_EQ(all.episodes_run, 1);
  EXPECT_EQ(all.policy.parameters, fixture.policy.parameters);
  const RlTrainingLog recent = fixture.run([](RlOptions& o) { o.episodes = 1; });
  EXPECT_NE(recent.policy.parameters, fixture.policy.parameters);
  // Over more episodes the two baselines train differently.
  const RlTrainingLog all_3 = fixture.run([](RlOptions& o) {
    o.episodes = 3;
    o.baseline = RlBaseline::all_so_far;
  });
  const RlTrainingLog recent_3 = fixture.run([](RlOptions& o) { o.episodes = 3; });
  EXPECT_NE(all_3.policy.parameters, recent_3.policy.parameters);
}

// An evaluation episode plays the argmax without updating: one training episode then one
// evaluation leaves the policy of the training episode alone, and the evaluation is the
// greedy episode (not played again).
TEST(RlPlacer, EvaluationEpisodesDoNotUpdate) {
  const TrainedFixture fixture;
  const RlTrainingLog trained = fixture.run([](RlOptions& o) { o.episodes = 1; });
  const RlTrainingLog evaluated = fixture.run([](RlOptions& o) {
    o.episodes = 2;
    o.eval_every = 2;
  });
  EXPECT_EQ(evaluated.episodes_run, 2);
  EXPECT_EQ(evaluated.evaluation_episodes, 1);
  EXPECT_EQ(evaluated.policy.parameters, trained.policy.parameters);
  EXPECT_EQ(evaluated.episode_step_time_s[0], trained.episode_step_time_s[0]);
  EXPECT_EQ(evaluated.greedy_step_time_s, trained.greedy_step_time_s);
  EXPECT_EQ(evaluated.episode_step_time_s[1], evaluated.greedy_step_time_s);
  // The study's budget: 50 episodes, every 5th an evaluation, 40 training.
  const RlTrainingLog study = fixture.run([](RlOptions& o) {
    o.episodes = 50;
    o.eval_every = 5;
  });
  EXPECT_EQ(study.episodes_run, 50);
  EXPECT_EQ(study.evaluation_episodes, 10);
  EXPECT_EQ(study.episode_step_time_s.size(), 50U);
  EXPECT_EQ(study.greedy_step_time_s, study.episode_step_time_s[49]);
}

// Started from the best placement so far, every episode begins where the best-so-far curve
// stood after the previous one; the first from device 0 (the study's start).
TEST(RlPlacer, EpisodesStartFromTheBestPlacementSoFar) {
  const TrainedFixture fixture;
  const NodeCosts costs = fixture.cost_model.node_costs(fixture.graph);
  const Placement device_0{.device_count = 3, .device_of_node = std::vector<int>(20, 0)};
  const double device_0_s =
      estimate_step_time_s(fixture.graph, costs, fixture.cost_model.link(), device_0);
  const RlTrainingLog best = fixture.run([](RlOptions& o) {
    o.episodes = 20;
    o.start = kRlStartDevice0;
    o.episode_start = RlEpisodeStart::best;
  });
  EXPECT_EQ(best.start_step_time_s, device_0_s);
  ASSERT_EQ(best.episode_start_step_time_s.size(), 20U);
  EXPECT_EQ(best.episode_start_step_time_s[0], device_0_s);
  for (size_t e = 1; e < 20; ++e) {
    EXPECT_EQ(best.episode_start_step_time_s[e], best.best_step_time_s[e - 1]) << "episode " << e;
  }
  EXPECT_LT(best.best_step_time_s.back(), device_0_s);  // the incumbent moved
  const RlTrainingLog fixed = fixture.run([](RlOptions& o) {
    o.episodes = 20;
    o.start = kRlStartDevice0;
  });
  for (double s : fixed.episode_start_step_time_s) EXPECT_EQ(s, device_0_s);
}

// Clipping above every gradient's norm changes nothing; a small clip changes the training.
// A constant entropy weight trains differently from the linearly decayed one.
TEST(RlPlacer, ClippingAndTheEntropySchedule) {
  const TrainedFixture fixture;
  auto with = [](int episodes) {
    return [episodes](RlOptions& o) {
      o.episodes = episodes;
      o.entropy_weight = 1.0;
    };
  };
  const RlTrainingLog plain = fixture.run(with(4));
  const RlTrainingLog loose = fixture.run([&](RlOptions& o) {
    with(4)(o);
    o.clip_norm = 1e12;
  });
  const RlTrainingLog tight = fixture.run([&](RlOptions& o) {
    with(4)(o);
    o.clip_norm = 1e-3;
  });
  EXPECT_EQ(loose.policy.parameters, plain.policy.parameters);
  EXPECT_NE(tight.policy.parameters, plain.policy.parameters);
  const RlTrainingLog constant = fixture.run([&](RlOptions& o) {
    with(4)(o);
    o.entropy_schedule = RlEntropySchedule::constant;
  });
  EXPECT_NE(constant.policy.parameters, plain.policy.parameters);
  // The first episode's weight is the same under both schedules.
  const RlTrainingLog constant_1 = fixture.run([&](RlOptions& o) {
    with(1)(o);
    o.entropy_schedule = RlEntropySchedule::constant;
  });
  EXPECT_EQ(constant_1.policy.parameters, fixture.run(with(1)).policy.parameters);
}

// A policy saved after training and loaded untrained (0 episodes) plays the same greedy
// episode on the same graph and seed; on a graph of another size it still places.
TEST(RlPolicyFile, RoundTripsExactlyAndPlacesWithoutTraining) {
  const Graph graph = testing::random_dag(20, 0.15, 4, 3);
  const CostModel cost_model = testing::timed_cost_model(graph, std::vector<double>(20, 1.0),
                                                         std::vector<double>(20, 2.0), {0.2, 1e9});
  const Order order = topological_order(graph);
  PlacementRequest request = rl_request(cost_model, 3, 7);
  request.rl.episodes = 20;
  request.rl.rounds = 3;
  RlTrainingLog trained;
  request.rl_log = &trained;
  place_rl(graph, order, request);
  const std::string path =
      (std::filesystem::temp_directory_path() / "interplace_test_rl.policy").string();
  write_rl_policy(path, trained.policy);
  const RlSavedPolicy loaded = read_rl_policy(path);
  EXPECT_EQ(loaded.parameters, trained.policy.parameters);  // bit for bit
  EXPECT_EQ(loaded.rounds, 3);
  EXPECT_EQ(loaded.devices, 3);

  request.rl.episodes = 0;
  request.rl.rounds = 8;  // the file's rounds win
  request.rl.initial = loaded;
  RlTrainingLog replay;
  request.rl_log = &replay;
  place_rl(graph, order, request);
  EXPECT_EQ(replay.episodes_run, 0);
  EXPECT_EQ(replay.greedy_step_time_s, trained.greedy_step_time_s);

  const Graph other = testing::random_dag(35, 0.1, 5, 3);
  const CostModel other_model =
      testing::timed_cost_model(other, std::vector<double>(35, 1.0), std::vector<double>(35, 1.0));
  PlacementRequest unseen = rl_request(other_model, 3, 1);
  unseen.rl.episodes = 0;
  unseen.rl.initial = loaded;
  EXPECT_EQ(place_rl(other, topological_order(other), unseen).device_of_node.size(), 35U);
  unseen.device_count = 2;
  EXPECT_THROW(place_rl(other, topological_order(other), unseen), Error);  // 3-device policy
  std::filesystem::remove(path);
}

// A lookahead policy's file (version 2, with its candidate features) round-trips and
// places as it did.
TEST(RlPolicyFile, LookaheadPolicyRoundTrips) {
  const Graph graph = testing::random_dag(20, 0.15, 4, 3);
  const CostModel cost_model = testing::timed_cost_model(graph, std::vector<double>(20, 1.0),
                                                         std::vector<double>(20, 2.0), {0.2, 1e9});
  const Order order = topological_order(graph);
  PlacementRequest request{.device_count = 3, .cost_model = cost_model};
  request.seed = 4;
  request.rl.episodes = 10;
  request.rl.episode_start = RlEpisodeStart::start;  // the greedy episode from the start
  RlTrainingLog trained;
  request.rl_log = &trained;
  place_rl(graph, order, request);
  EXPECT_EQ(trained.policy.candidates, 3);
  const std::string path =
      (std::filesystem::temp_directory_path() / "interplace_test_rl2.policy").string();
  write_rl_policy(path, trained.policy);
  std::string header;
  std::getline(std::ifstream(path), header);
  EXPECT_EQ(header, "interplace-rl-policy 2");
  const RlSavedPolicy loaded = read_rl_policy(path);
  EXPECT_EQ(loaded.candidates, 3);
  EXPECT_EQ(loaded.parameters, trained.policy.parameters);
  request.rl.episodes = 0;
  request.rl.features = RlFeatures::placeto;  // the file's features win
  request.rl.initial = loaded;
  RlTrainingLog replay;
  request.rl_log = &replay;
  place_rl(graph, order, request);
  EXPECT_EQ(replay.greedy_step_time_s, trained.greedy_step_time_s);
  std::filesystem::remove(path);
}

TEST(RlPolicyFile, MalformedFilesFailNamingTheLine) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "interplace_test_bad.policy").string();
  auto expect_bad = [&](const std::string& text, const std::string& what) {
    std::ofstream(path) << text;
    try {
      read_rl_policy(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_input);
      EXPECT_NE(std::string(error.what()).find(what), std::string::npos) << error.what();
    }
  };
  const std::string header = "interplace-rl-policy 1\nrounds 1\ninputs 1\nhidden 1\ndevices 1\n";
  expect_bad("something else\n", "line 1");
  expect_bad("interplace-rl-policy 3\n", "line 1");
  expect_bad(header + "parameters 4\n1\n2\n3\n", "end of file");
  expect_bad(header + "parameters 4\n1\n2\nnan\n4\n", "line 9");
  expect_bad(header + "parameters 4\n1\n2\n3x\n4\n", "line 9");
  expect_bad(header + "parameters 4\n1\n2\n3\n4\n5\n", "more lines");
  expect_bad(header + "parameters 3\n1\n2\n3\n", "expected 4");  // W1 b1 W2 b2: 4
  expect_bad("interplace-rl-policy 1\nrounds -1\n", "line 2");
  // Version 2 has a candidates line; its weights are counted.
  const std::string header_2 =
      "interplace-rl-policy 2\nrounds 1\ninputs 1\nhidden 1\ndevices 1\ncandidates 2\n";
  expect_bad(header_2 + "parameters 4\n1\n2\n3\n4\n", "expected 6");
  expect_bad("interplace-rl-policy 2\nrounds 1\ninputs 1\nhidden 1\ndevices 1\nparameters 4\n",
             "line 6");
  // Sizes are checked before anything is reserved for the parameters.
  expect_bad(header + "parameters 99999999\n1\n", "99999999 parameters, expected 4");
  expect_bad(
      "interplace-rl-policy 1\nrounds 1\ninputs 5000\nhidden 5000\ndevices 3\n"
      "parameters 25020003\n1\n",
      "too short for 25020003 parameters");
  try {
    read_rl_policy("/dev/zero");
    ADD_FAILURE() << "read /dev/zero";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos);
  }
  std::ofstream(path) << header << "parameters 4\n1\n2\n3\n4\n";
  EXPECT_EQ(read_rl_policy(path).parameters, (std::vector<double>{1, 2, 3, 4}));
  std::ofstream(path) << header_2 << "parameters 6\n1\n2\n3\n4\n5\n6\n";
  EXPECT_EQ(read_rl_policy(path).candidates, 2);
  std::filesystem::remove(path);
  EXPECT_THROW(read_rl_policy(path), Error);  // missing
}

// The pinned runs' problem: a 60-node DAG with unequal forward times, 3 devices' worth of
// work, a slow link, the topo-lifo order.
struct WeightedDag {
  Graph graph = testing::random_dag(60, 0.08, 21, 3);
  CostModel cost_model =
      testing::timed_cost_model(graph, forward(), std::vector<double>(60, 2.0), {0.2, 1e9});
  Order order = compute_order(graph, OrderKind::topo_lifo);
  static std::vector<double> forward() {
    std::vector<double> f(60);
    for (int i = 0; i < 60; ++i) f[static_cast<size_t>(i)] = 1.0 + (i * 7 % 5);
    return f;
  }
};

// FNV-1a over the bit patterns of what an rl run returns and logs: a change of one bit in
// the placement, the learning curve or the trained parameters changes it.
uint64_t fingerprint(const Placement& placement, const RlTrainingLog& log) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto add = [&](uint64_t word) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (word >> (8 * byte)) & 0xffU;
      hash *= 0x100000001b3ULL;
    }
  };
  auto add_double = [&](double value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    add(bits);
  };
  for (int device : placement.device_of_node) add(static_cast<uint64_t>(device));
  for (double v : log.episode_step_time_s) add_double(v);
  for (double v : log.best_step_time_s) add_double(v);
  add_double(log.start_step_time_s);
  add_double(log.greedy_step_time_s);
  add_double(log.best_final_s);
  for (double v : log.policy.parameters) add_double(v);
  return hash;
}

// The placer's result, learning curve and trained parameters on a 60-node DAG, bit for bit
// as the code before the incremental featurizer and grouping (commit 5b01d36) computed
// them: the faster featurizer must not change what rl does, and a graph no larger than
// the group limit is not grouped.
TEST(RlPlacer, BitIdenticalToTheReferenceImplementation) {
  const WeightedDag dag;
  const Graph& graph = dag.graph;
  const CostModel& cost_model = dag.cost_model;
  const Order& order = dag.order;
  // The default group limit, a limit of exactly the node count, and no grouping.
  for (int groups : {RlOptions{}.groups, 60, 0}) {
    PlacementRequest request = rl_request(cost_model, 3, 12);
    request.rl.episodes = 30;
    request.rl.groups = groups;
    RlTrainingLog log;
    request.rl_log = &log;
    const Placement placement = place_rl(graph, order, request);
    EXPECT_EQ(log.groups, 0);
    EXPECT_EQ(fingerprint(placement, log), 0xc63203f90b08db92ULL)
        << groups << " groups: " << std::hex << fingerprint(placement, log);
  }
}

// The lookahead policy's result, learning curve and trained parameters at its defaults on
// the same DAG, bit for bit as the commit that introduced it (b3e60c4) computed them:
// refactoring its features must not change what rl does.
TEST(RlPlacer, LookaheadBitIdenticalToItsFirstImplementation) {
  const WeightedDag dag;
  const Graph& graph = dag.graph;
  const CostModel& cost_model = dag.cost_model;
  const Order& order = dag.order;
  PlacementRequest request{.device_count = 3, .cost_model = cost_model};
  request.seed = 12;
  request.rl.episodes = 30;
  RlTrainingLog log;
  request.rl_log = &log;
  const Placement placement = place_rl(graph, order, request);
  EXPECT_EQ(fingerprint(placement, log), 0x5f44e27b99ff9cecULL)
      << std::hex << fingerprint(placement, log);
}

}  // namespace
}  // namespace interplace::placement

namespace interplace::placement {
namespace {

double list_schedule_s(const Graph& graph, const CostModel& cost_model, const Placement& p) {
  return estimate_step_time_s(graph, cost_model.node_costs(graph), cost_model.link(), p);
}

// The lookahead policy learns to prefer the moves that shorten the step (its weight on the
// step time's decrease grows positive) and, within the default 50 episodes, places better
// than the same training whose candidate weights cannot move (a learning rate of 1e-12:
// the policy sees the lookahead but has not learned what it means).
TEST(RlPlacer, LookaheadPolicyLearnsToPreferFasterMoves) {
  const WeightedDag dag;
  const Graph& graph = dag.graph;
  const CostModel& cost_model = dag.cost_model;
  const Order& order = dag.order;
  int better = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    PlacementRequest request{.device_count = 3, .cost_model = cost_model};
    request.seed = seed;
    RlTrainingLog log;
    request.rl_log = &log;
    const double learned_s = list_schedule_s(graph, cost_model, place_rl(graph, order, request));
    const double gain_weight = log.policy.parameters[log.policy.parameters.size() - 3];
    EXPECT_GT(gain_weight, 1.0) << "seed " << seed;
    EXPECT_LT(log.greedy_step_time_s, log.start_step_time_s) << "seed " << seed;
    request.rl.candidate_learning_rate = 1e-12;
    const double frozen_s = list_schedule_s(graph, cost_model, place_rl(graph, order, request));
    better += learned_s < frozen_s ? 1 : 0;
  }
  EXPECT_EQ(better, 5);
}

// An 80-node DAG of unequal nodes and a slow link, placed as groups in the tests below.
struct GroupedDag {
  Graph graph = testing::random_dag(80, 0.06, 9, 3);
  CostModel cost_model =
      testing::timed_cost_model(graph, forward(), std::vector<double>(80, 1.0), {0.3, 1e9});
  static std::vector<double> forward() {
    std::vector<double> times(80);
    for (int i = 0; i < 80; ++i) times[static_cast<size_t>(i)] = 1.0 + (i * 3 % 7);
    return times;
  }
};

// On a graph that is placed as groups, a start from another placer is a candidate as the
// node placement it is: the result is never slower than the start.
TEST(RlPlacer, GroupedPlacementNeverLosesTheStart) {
  const GroupedDag dag;
  const Graph& graph = dag.graph;
  const CostModel& cost_model = dag.cost_model;
  const Order order = compute_order(graph, OrderKind::topo);
  PlacementRequest request{.device_count = 3, .cost_model = cost_model};
  const double start_s =
      list_schedule_s(graph, cost_model, place_greedy_eft(graph, order, request));
  request.rl.start = "greedy-eft";
  request.rl.groups = 10;
  request.rl.episodes = 3;
  RlTrainingLog log;
  request.rl_log = &log;
  const double rl_s = list_schedule_s(graph, cost_model, place_rl(graph, order, request));
  EXPECT_EQ(log.groups, 10);
  EXPECT_EQ(log.start_step_time_s, start_s);
  EXPECT_LE(rl_s, start_s);
}

// Coarse to fine (docs/placers.md#coarse-to-fine): the last fine_episodes place
// fine_factor x groups groups, the first of them from the coarse level's best placement,
// the same policy going on learning; the episodes count once over both levels.
TEST(RlPlacer, CoarseToFinePlacesFinerGroupsFromTheCoarseBest) {
  const GroupedDag dag;
  const Graph& graph = dag.graph;
  const CostModel& cost_model = dag.cost_model;
  const NodeCosts costs = cost_model.node_costs(graph);
  const Order order = compute_order(graph, OrderKind::topo);
  // Every placement the policy's reward saw, per level, with its group-graph estimate.
  std::vector<std::vector<std::pair<Placement, double>>> seen;
  PlacementRequest request{.device_count = 3, .cost_model = cost_model};
  request.seed = 4;
  request.rl.groups = 10;
  request.rl.fine_factor = 3.0;
  request.rl.episodes = 8;
  request.rl.fine_episodes = 3;
  request.rl.group_estimator = [&](const Graph& group_graph, const NodeCosts& group_costs) {
    seen.emplace_back();
    auto estimate = std::make_shared<StepTimeEstimate>(group_graph, group_costs, cost_model.link(),
                                                       request.micro_batches);
    return [&level = seen.back(), estimate](const Placement& p) {
      level.emplace_back(p, (*estimate)(p));
      return level.back().second;
    };
  };
  seen.reserve(2);  // the estimators keep references into `seen`
  RlTrainingLog log;
  request.rl_log = &log;
  const Placement placement = place_rl(graph, order, request);
  EXPECT_EQ(log.groups, 10);
  EXPECT_EQ(log.level_groups, (std::vector<int>{10, 30}));
  EXPECT_EQ(log.level_episodes, (std::vector<int>{5, 3}));
  EXPECT_EQ(log.episodes_run, 8);
  EXPECT_EQ(log.episode_step_time_s.size(), 8U);
  ASSERT_EQ(seen.size(), 2U);

  // The fine level's first placement (its start) is the coarse level's best: a coarse
  // placement the reward saw, whose estimate is the coarse level's last best-so-far.
  const GraphGroups coarse = group_nodes(graph, costs, 10);
  const GraphGroups fine = group_nodes(graph, costs, 30);
  ASSERT_EQ(seen[0].front().first.device_of_node.size(), 10U);
  ASSERT_EQ(seen[1].front().first.device_of_node.size(), 30U);
  const Placement fine_start = ungroup_placement(fine, seen[1].front().first);
  bool found = false;
  for (const auto& [p, estimate_s] : seen[0]) {
    if (ungroup_placement(coarse, p).device_of_node == fine_start.device_of_node &&
        estimate_s == log.best_step_time_s[4]) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_LT(log.best_step_time_s[4], log.start_step_time_s * 2.0);  // a real estimate
  // What it returns is never slower on the full graph than where the fine level started.
  EXPECT_LE(list_schedule_s(graph, cost_model, placement),
            list_schedule_s(graph, cost_model, fine_start));
  EXPECT_EQ(log.best_final_s, list_schedule_s(graph, cost_model, placement));

  // The coarse level's episodes are a one-level run's first ones, bit for bit (the same
  // random stream and learning-rate schedule over all the episodes).
  const std::vector<double> two_levels = log.episode_step_time_s;
  seen.clear();
  request.rl.fine_episodes = 0;
  place_rl(graph, order, request);
  EXPECT_EQ(log.level_groups, (std::vector<int>{10}));
  EXPECT_EQ(
      std::vector<double>(two_levels.begin(), two_levels.begin() + 5),
      std::vector<double>(log.episode_step_time_s.begin(), log.episode_step_time_s.begin() + 5));
  EXPECT_EQ(seen.size(), 1U);
  request.rl.fine_episodes = 3;

  // Finer than the graph: the fine level places the nodes (the full graph's estimator).
  seen.clear();
  request.rl.fine_factor = 10.0;
  place_rl(graph, order, request);
  EXPECT_EQ(log.level_groups, (std::vector<int>{10, 0}));
  EXPECT_EQ(log.level_episodes, (std::vector<int>{5, 3}));
  EXPECT_EQ(seen.size(), 1U);
  // More fine episodes than episodes: every episode is a fine one.
  seen.clear();
  request.rl.fine_factor = 3.0;
  request.rl.episodes = 2;
  place_rl(graph, order, request);
  EXPECT_EQ(log.level_episodes, (std::vector<int>{0, 2}));
  // No episodes (a loaded policy placing): its greedy episode places the finer groups.
  seen.clear();
  request.rl.episodes = 0;
  request.rl.initial = log.policy;
  place_rl(graph, order, request);
  EXPECT_EQ(log.level_groups, (std::vector<int>{10, 30}));
  EXPECT_EQ(log.level_episodes, (std::vector<int>{0, 0}));
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_GT(seen[1].size(), 1U);  // the greedy episode's decisions
  request.rl.initial.reset();
  request.rl.episodes = 2;
  // One level.
  seen.clear();
  request.rl.fine_episodes = 0;
  place_rl(graph, order, request);
  EXPECT_EQ(log.level_groups, (std::vector<int>{10}));
  EXPECT_EQ(log.level_episodes, (std::vector<int>{2}));
}

}  // namespace
}  // namespace interplace::placement
