// The learned placer `rl` (Placeto, Addanki et al. 2019, as the traversal-order study uses
// it; docs/placers.md#rl): a policy over devices for one node at a time, trained with
// REINFORCE against a step-time estimator. An episode starts from a seeded random
// placement (or another start, or the best placement so far) and visits every node once in the
// traversal order, moving it to the device the policy samples; the reward of a move is the decrease
// of the penalised step time. Graphs of more than RlOptions::groups nodes are coarsened first
// (graph_groups.hpp) and the policy places groups, as Placeto places TensorFlow's grouped graphs.
//
// The policy is small and self-contained (no autodiff): node features are propagated
// parent->child and child->parent for `rounds` rounds by fixed mean aggregation, the node
// being placed is described by its own embedding and the mean embeddings of its
// ancestors, descendants and parallel nodes (Placeto's pooling), and a two-layer network
// with learned weights maps that to a softmax over devices. Its log-probability gradient
// is analytic (RlPolicy::log_prob_gradient) and checked against finite differences.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace interplace::placement {

struct Placement;
class Graph;
struct NodeCosts;

// Lower is better; the same type as placers.hpp's StepTimeEstimator.
using RlStepEstimator = std::function<double(const Placement&)>;

// A trained policy, as saved to and read from a policy file (docs/placers.md#policy-files):
// what the network needs to place another graph on the same number of devices.
struct RlSavedPolicy {
  int rounds = 0;  // message-passing rounds the policy was trained with
  int inputs = 0;  // of the node context (the network's first layer)
  int hidden = 0;
  int devices = 0;
  int candidates = 0;              // features per candidate device (RlFeatures::lookahead)
  std::vector<double> parameters;  // W1, b1, W2, b2, a (RlPolicy's layout)
};

// Throws invalid_input when the file cannot be written, or cannot be read or is not a
// well-formed policy file (naming the line).
void write_rl_policy(const std::string& path, const RlSavedPolicy& policy);
RlSavedPolicy read_rl_policy(const std::string& path);

// The reward of one move (docs/placers.md#rl), from the penalised cost before and after it.
enum class RlReward {
  start_relative,  // (before - after) / the start's cost: the decrease relative to the start
  log_runtime,     // log(before) - log(after): Placeto's per-step reward
  // log(after) - log(before): the sign the traversal-order study's code uses (its fork of
  // Placeto flipped it); the policy gradient then favours moves that slow the step down.
  log_runtime_study_sign,
};
// What each step's return is compared with (the REINFORCE baseline).
enum class RlBaseline {
  recent,  // the mean return at this step over the last baseline_window training episodes
  // the mean return at this step over every training episode so far, the current included
  // (the traversal-order study's code)
  all_so_far,
};
// Where every episode starts.
enum class RlEpisodeStart {
  start,  // the start placement (RlOptions::start), every episode
  best,   // the fastest memory-feasible placement found so far (at first, the start)
};
// What the policy sees of a decision (docs/placers.md#rl).
enum class RlFeatures {
  placeto,  // Placeto's node features and pooled embeddings only
  // those, and for every candidate device what moving the node there does: the change of
  // the penalised step time (a lookahead), the share of the node's tensor bytes that stay
  // on the device, and the device's compute load; scored by weights shared by the devices
  lookahead,
};
// How the entropy weight changes over the episodes.
enum class RlEntropySchedule {
  linear,    // from entropy_weight at the first episode to 0 at the last
  constant,  // entropy_weight throughout
};

// Names on the command line; *_by_name throws invalid_input listing the valid names.
const std::vector<std::string>& rl_reward_names();
const std::vector<std::string>& rl_baseline_names();
const std::vector<std::string>& rl_episode_start_names();
const std::vector<std::string>& rl_entropy_schedule_names();
const std::vector<std::string>& rl_features_names();
std::string to_string(RlReward reward);
std::string to_string(RlBaseline baseline);
std::string to_string(RlEpisodeStart start);
std::string to_string(RlEntropySchedule schedule);
std::string to_string(RlFeatures features);
RlReward rl_reward_by_name(const std::string& name);
RlBaseline rl_baseline_by_name(const std::string& name);
RlEpisodeStart rl_episode_start_by_name(const std::string& name);
RlEntropySchedule rl_entropy_schedule_by_name(const std::string& name);
RlFeatures rl_features_by_name(const std::string& name);

// The reward of a move from penalised cost `before` to `after`; `start_cost` is the start
// placement's (used by RlReward::start_relative only).
double rl_move_reward(RlReward reward, double before, double after, double start_cost);

// The start placement that puts every node on device 0 (the study's initial placement).
inline constexpr const char* kRlStartDevice0 = "device-0";

struct RlOptions {
  // Training episodes (each visits every node once); 0 only with `initial`: place with the
  // loaded policy without training it.
  int episodes = 50;                  // the traversal-order study's budget
  int rounds = 8;                     // message-passing rounds (Placeto: 8)
  int hidden = 32;                    // width of the policy's hidden layer
  double learning_rate = 1e-3;        // Adam, decayed linearly over the episodes ...
  double final_learning_rate = 1e-4;  // ... to this (Placeto: 1e-3 to 1e-4)
  int baseline_window = 10;           // episodes the per-step return baseline averages
  RlBaseline baseline = RlBaseline::recent;
  // Weight of the policy's entropy (per decision) in the objective at the first episode,
  // by default decayed linearly to 0 at the last: keeps the policy from
  // settling on one device per node before it has seen the alternatives.
  double entropy_weight = 0.0;
  RlEntropySchedule entropy_schedule = RlEntropySchedule::linear;
  RlReward reward = RlReward::start_relative;
  RlFeatures features = RlFeatures::lookahead;
  // Adam's rate for the candidate weights (RlFeatures::lookahead; decayed in proportion to
  // learning_rate): a few weights that must move far within a short budget.
  double candidate_learning_rate = 0.3;
  // Discount of later rewards in a step's return (1: the return to go, Placeto's).
  double discount = 0.9;
  // > 0: every eval_every-th of the `episodes` is an evaluation episode: the policy's
  // argmax device for each node, no sampling and no update (the study: 50 episodes, every
  // 5th an evaluation, 40 training). 0: every episode trains. 1 is refused (nothing trains).
  int eval_every = 0;
  // > 0: an update's gradient is scaled down to this global (L2) norm when larger, the
  // norm taken of the gradient summed over the episode's steps (Placeto's clipping). The
  // update itself uses the mean over the steps, which Adam's step does not distinguish
  // from the sum except through its epsilon. 0: no clipping.
  double clip_norm = 0.0;
  // Weight of the memory penalty: the penalised cost is step time x (1 + penalty x
  // sum over devices of bytes above capacity / capacity).
  double memory_penalty = 10.0;
  double time_budget_s = 0.0;  // > 0: stop training after this much wall time
  // The start placement: "random" (Placeto's random start) uses the request's seed,
  // "device-0" puts every node on device 0, any other placer name but "rl" starts from its
  // result.
  std::string start = "random";
  RlEpisodeStart episode_start = RlEpisodeStart::best;
  // Reward source; empty: the list-scheduled estimate (step_estimate.hpp) with the
  // request's micro-batches. The command line passes the simulator `simulate` uses.
  RlStepEstimator estimator = {};
  // Groups the policy places on graphs of more nodes (Placeto's grouped graphs;
  // docs/placers.md#grouping): the graph is coarsened to at most this many groups
  // (graph_groups.hpp), each episode places every group once, a group's nodes follow it,
  // and the reward is estimated on the group graph (`group_estimator`). The group-graph
  // best, the start and the greedy result are re-estimated on the full graph with
  // `estimator`; the placer returns the fastest of them that fits memory. 0: never group.
  // Graphs of at most this many nodes are placed node by node as without grouping.
  int groups = 448;
  // Coarse to fine (docs/placers.md#coarse-to-fine), on graphs that are grouped: the last
  // `fine_episodes` of the `episodes` place fine_factor x groups groups (rounded; the
  // nodes themselves where the graph has no more), each group of the coarse level split
  // into its finer groups, starting from the coarse level's best placement and going on
  // training the same policy. 0: one level.
  int fine_episodes = 5;
  double fine_factor = 3.0;
  // The reward source on the group graph, made for its graph and costs (which outlive the
  // training); empty: the list-scheduled estimate on the group graph.
  std::function<RlStepEstimator(const Graph& graph, const NodeCosts& costs)> group_estimator = {};
  // Start from a trained policy instead of random weights (Placeto's generalisation: a
  // policy trained on other graphs of a family). Its rounds and hidden width replace
  // `rounds` and `hidden`; its device count must equal the request's.
  std::optional<RlSavedPolicy> initial = std::nullopt;
};

// What training did, for reports: one entry per finished episode.
struct RlTrainingLog {
  std::vector<double> episode_step_time_s;  // of the episode's final placement
  std::vector<double> best_step_time_s;     // best memory-feasible placement so far
  // Step time of the placement each episode started from (the start, or with
  // RlEpisodeStart::best the best so far); the same estimate as episode_step_time_s.
  std::vector<double> episode_start_step_time_s;
  double start_step_time_s = 0.0;  // the start placement
  int evaluation_episodes = 0;     // of episodes_run, those that did not train (eval_every)
  // One episode after training, argmax instead of sampling (the last evaluation episode
  // when the last episode was one).
  double greedy_step_time_s = 0.0;
  double best_final_s = 0.0;  // of the returned placement
  int episodes_run = 0;       // < episodes when the time budget stopped training
  // Groups the policy placed (RlOptions::groups); 0 when it placed the nodes themselves.
  // With groups, episode_step_time_s and best_step_time_s are group-graph estimates and
  // start, greedy and best_final are re-estimated on the full graph.
  int groups = 0;
  // Per level (coarse to fine; empty when the policy placed the nodes): the groups it
  // placed (0: the nodes themselves) and the episodes it ran, in the order run.
  std::vector<int> level_groups;
  std::vector<int> level_episodes;
  double wall_s = 0.0;
  RlSavedPolicy policy;  // the policy after training, for write_rl_policy
};

// Throws invalid_input naming the bad field.
void check_rl_options(const RlOptions& options);

// The fine level's group count: fine_factor x groups, rounded.
int fine_group_count(int groups, double fine_factor);

// Named sets of RlOptions (docs/placers.md, "The traversal-order study as its code ran it"),
// for the sweep key `rl_preset` (the traversal-order study's spec):
enum class RlPreset {
  standard,  // RlOptions{} as declared above ("default")
  // the traversal-order study's code: 50 episodes of which every 5th evaluates, Adam at a
  // constant 1e-3, every episode from the best placement so far starting at device 0,
  // Placeto's log reward and the all-so-far baseline, no entropy, clipping at 1.25, one
  // grouping (no fine level); the policy with this suite's lookahead features
  wang2022,
  wang2022_placeto,  // the same with the study's own policy inputs (RlFeatures::placeto)
  // wang2022 with the placer's coarse to fine (RlOptions::fine_episodes at its default): a
  // policy that holds its own on the grouped graphs (docs/placers.md#coarse-to-fine)
  wang2022_fine,
};
// "default", "wang2022", "wang2022-placeto", "wang2022-fine"
const std::vector<std::string>& rl_preset_names();
std::string to_string(RlPreset preset);
RlPreset rl_preset_by_name(const std::string& name);
RlOptions rl_preset_options(RlPreset preset);

// The policy network over `devices` outputs: logits = W2 tanh(W1 x + b1) + b2 + C a, where
// the input z is the node context x (`inputs` values) followed, with `candidates` > 0, by
// `candidates` features of each device in turn (C, devices x candidates), scored by the
// weights `a` that every device shares.
class RlPolicy {
 public:
  RlPolicy(int inputs, int hidden, int devices, uint64_t seed, int candidates = 0);
  // Throws invalid_input when the parameter count does not match the sizes.
  explicit RlPolicy(const RlSavedPolicy& saved);
  int inputs() const { return inputs_; }
  int candidates() const { return candidates_; }
  // Values of z: the context and every device's candidate features.
  int input_size() const { return inputs_ + devices_ * candidates_; }
  // The parameters of a policy of these sizes (the layout below), for checking a file
  // before anything is allocated.
  static int64_t parameter_count(int64_t inputs, int64_t hidden, int64_t devices,
                                 int64_t candidates) {
    return hidden * inputs + hidden + devices * hidden + devices + candidates;
  }
  int devices() const { return devices_; }
  int parameter_count() const { return static_cast<int>(parameters_.size()); }
  std::span<double> parameters() { return parameters_; }
  std::span<const double> parameters() const { return parameters_; }

  // Softmax probabilities of the devices for input `z` (input_size() values).
  std::vector<double> probabilities(std::span<const double> z) const;
  // log p(action | z).
  double log_prob(std::span<const double> z, int action) const;
  // Adds scale * d log p(action | z) / d parameters to `gradient` (parameter_count()).
  void log_prob_gradient(std::span<const double> z, int action, double scale,
                         std::span<double> gradient) const;
  // Entropy of the device distribution, and scale * its gradient added to `gradient`.
  double entropy(std::span<const double> z) const;
  void entropy_gradient(std::span<const double> z, double scale, std::span<double> gradient) const;

 private:
  void hidden_layer(std::span<const double> z, std::vector<double>& h) const;
  // Adds the gradient of sum_k dlogits[k] * logit_k to `gradient`.
  void backpropagate(std::span<const double> z, const std::vector<double>& dlogits,
                     std::span<double> gradient) const;
  int inputs_;
  int hidden_;
  int devices_;
  int candidates_;
  // W1 (hidden x inputs), b1, W2 (devices x hidden), b2, a (candidates)
  std::vector<double> parameters_;
};

}  // namespace interplace::placement
