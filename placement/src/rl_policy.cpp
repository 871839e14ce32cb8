// The rl placer's policy network and its analytic log-probability gradient.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"
#include "interplace/kernels/random.hpp"
#include "interplace/placement/rl_placer.hpp"

namespace interplace::placement {

RlPolicy::RlPolicy(int inputs, int hidden, int devices, uint64_t seed, int candidates)
    : inputs_(inputs), hidden_(hidden), devices_(devices), candidates_(candidates) {
  if (inputs < 1 || hidden < 1 || devices < 1 || candidates < 0) {
    throw_invalid("rl policy: inputs, hidden and devices must be >= 1, candidates >= 0");
  }
  const size_t w1 = static_cast<size_t>(hidden) * static_cast<size_t>(inputs);
  const size_t w2 = static_cast<size_t>(devices) * static_cast<size_t>(hidden);
  parameters_.assign(static_cast<size_t>(parameter_count(inputs, hidden, devices, candidates)),
                     0.0);
  // Glorot-uniform weights, zero biases and candidate weights: the untrained policy is
  // close to uniform, so the first episodes explore every device.
  kernels::Rng rng(seed);
  const auto limit1 = static_cast<float>(std::sqrt(6.0 / (inputs + hidden)));
  for (size_t i = 0; i < w1; ++i) parameters_[i] = rng.uniform(-limit1, limit1);
  const auto limit2 = static_cast<float>(std::sqrt(6.0 / (hidden + devices)));
  for (size_t i = 0; i < w2; ++i)
    parameters_[w1 + static_cast<size_t>(hidden) + i] = rng.uniform(-limit2, limit2);
}

RlPolicy::RlPolicy(const RlSavedPolicy& saved)
    : RlPolicy(saved.inputs, saved.hidden, saved.devices, 0, saved.candidates) {
  if (saved.parameters.size() != parameters_.size()) {
    throw_invalid("rl policy: " + std::to_string(saved.parameters.size()) +
                  " parameters, expected " + std::to_string(parameters_.size()) + " for " +
                  std::to_string(saved.inputs) + " inputs, " + std::to_string(saved.hidden) +
                  " hidden, " + std::to_string(saved.devices) + " devices, " +
                  std::to_string(saved.candidates) + " candidate features");
  }
  parameters_ = saved.parameters;
}

namespace {
constexpr const char* kPolicyMagic = "interplace-rl-policy";
// Version 2 adds the `candidates` line; a policy without candidate features is written as
// version 1, which has the same meaning.
constexpr int kPolicyVersion = 2;
}  // namespace

void write_rl_policy(const std::string& path, const RlSavedPolicy& policy) {
  std::ofstream out(path);
  if (!out) throw_invalid("cannot write the rl policy file '" + path + "'");
  out << kPolicyMagic << ' ' << (policy.candidates > 0 ? kPolicyVersion : 1) << '\n'
      << "rounds " << policy.rounds << '\n'
      << "inputs " << policy.inputs << '\n'
      << "hidden " << policy.hidden << '\n'
      << "devices " << policy.devices << '\n';
  if (policy.candidates > 0) out << "candidates " << policy.candidates << '\n';
  out << "parameters " << policy.parameters.size() << '\n';
  char text[32];
  for (double value : policy.parameters) {
    std::snprintf(text, sizeof text, "%.17g", value);  // round-trips exactly
    out << text << '\n';
  }
  if (!out) throw_invalid("cannot write the rl policy file '" + path + "'");
}

RlSavedPolicy read_rl_policy(const std::string& path) {
  const int64_t file_bytes = check_input_file(path, "rl policy file", kMaxTextInputBytes);
  std::ifstream in(path);
  if (!in) throw_invalid("cannot read the rl policy file '" + path + "'");
  int line_number = 0;
  std::string line;
  auto fail = [&](const std::string& why) -> void {
    throw_invalid("rl policy file '" + path + "', line " + std::to_string(line_number) + ": " +
                  why);
  };
  auto next = [&]() {
    if (!std::getline(in, line)) {
      ++line_number;
      fail("unexpected end of file");
    }
    ++line_number;
  };
  next();
  const std::string magic = std::string(kPolicyMagic) + " ";
  const bool version_1 = line == magic + "1";
  if (!version_1 && line != magic + std::to_string(kPolicyVersion)) {
    fail("expected '" + magic + "1' or '" + magic + std::to_string(kPolicyVersion) + "'");
  }
  auto field = [&](const char* name, int minimum) {
    next();
    std::istringstream words(line);
    std::string key;
    long long value = 0;
    std::string rest;
    if (!(words >> key >> value) || key != name || (words >> rest) || value < minimum ||
        value > 100000000) {
      fail(std::string("expected '") + name + " N' with N >= " + std::to_string(minimum));
    }
    return static_cast<int>(value);
  };
  RlSavedPolicy policy;
  policy.rounds = field("rounds", 0);
  policy.inputs = field("inputs", 1);
  policy.hidden = field("hidden", 1);
  policy.devices = field("devices", 1);
  policy.candidates = version_1 ? 0 : field("candidates", 0);
  const int count = field("parameters", 1);
  // The sizes fix the count; checked before anything is allocated for it, as is that the
  // file can hold that many lines (a file claiming 10^8 parameters reserved 800 MB).
  const int64_t expected =
      RlPolicy::parameter_count(policy.inputs, policy.hidden, policy.devices, policy.candidates);
  if (count != expected) {
    fail(std::to_string(count) + " parameters, expected " + std::to_string(expected) + " for " +
         std::to_string(policy.inputs) + " inputs, " + std::to_string(policy.hidden) + " hidden, " +
         std::to_string(policy.devices) + " devices, " + std::to_string(policy.candidates) +
         " candidate features");
  }
  if (2 * int64_t{count} > file_bytes) {
    fail("the file (" + std::to_string(file_bytes) + " bytes) is too short for " +
         std::to_string(count) + " parameters");
  }
  policy.parameters.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    next();
    size_t used = 0;
    double value = 0.0;
    try {
      value = std::stod(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != line.size() || !std::isfinite(value)) {
      fail("expected a finite number");
    }
    policy.parameters.push_back(value);
  }
  if (std::getline(in, line)) {
    ++line_number;
    fail("more lines than the " + std::to_string(count) + " parameters");
  }
  RlPolicy check(policy);  // sizes consistent
  return policy;
}

void RlPolicy::hidden_layer(std::span<const double> z, std::vector<double>& h) const {
  if (static_cast<int>(z.size()) != input_size()) {
    throw_invalid("rl policy: " + std::to_string(z.size()) + " inputs, expected " +
                  std::to_string(input_size()));
  }
  h.assign(static_cast<size_t>(hidden_), 0.0);
  const double* w1 = parameters_.data();
  const double* b1 = w1 + static_cast<ptrdiff_t>(hidden_) * inputs_;
  for (int j = 0; j < hidden_; ++j) {
    double sum = b1[j];
    const double* row = w1 + static_cast<ptrdiff_t>(j) * inputs_;
    for (int i = 0; i < inputs_; ++i) sum += row[i] * z[static_cast<size_t>(i)];
    h[static_cast<size_t>(j)] = std::tanh(sum);
  }
}

std::vector<double> RlPolicy::probabilities(std::span<const double> z) const {
  std::vector<double> h;
  hidden_layer(z, h);
  const double* w2 = parameters_.data() + static_cast<ptrdiff_t>(hidden_) * (inputs_ + 1);
  const double* b2 = w2 + static_cast<ptrdiff_t>(devices_) * hidden_;
  const double* a = b2 + devices_;
  std::vector<double> p(static_cast<size_t>(devices_));
  for (int k = 0; k < devices_; ++k) {
    double sum = b2[k];
    for (int j = 0; j < hidden_; ++j) {
      sum += w2[static_cast<ptrdiff_t>(k) * hidden_ + j] * h[static_cast<size_t>(j)];
    }
    const size_t c = static_cast<size_t>(inputs_ + k * candidates_);
    for (int j = 0; j < candidates_; ++j) sum += a[j] * z[c + static_cast<size_t>(j)];
    p[static_cast<size_t>(k)] = sum;
  }
  const double top = *std::max_element(p.begin(), p.end());
  double total = 0.0;
  for (double& v : p) total += (v = std::exp(v - top));
  for (double& v : p) v /= total;
  return p;
}

double RlPolicy::log_prob(std::span<const double> z, int action) const {
  return std::log(probabilities(z)[static_cast<size_t>(action)]);
}

double RlPolicy::entropy(std::span<const double> z) const {
  double h = 0.0;
  for (double p : probabilities(z)) h -= p > 0.0 ? p * std::log(p) : 0.0;
  return h;
}

void RlPolicy::log_prob_gradient(std::span<const double> z, int action, double scale,
                                 std::span<double> gradient) const {
  const std::vector<double> p = probabilities(z);
  // d log softmax_a / d logit_k = [k == a] - p_k.
  std::vector<double> dlogits(p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    dlogits[k] = scale * ((static_cast<int>(k) == action ? 1.0 : 0.0) - p[k]);
  }
  backpropagate(z, dlogits, gradient);
}

void RlPolicy::entropy_gradient(std::span<const double> z, double scale,
                                std::span<double> gradient) const {
  const std::vector<double> p = probabilities(z);
  double h = 0.0;
  for (double v : p) h -= v > 0.0 ? v * std::log(v) : 0.0;
  // H = -sum p log p; dH / d logit_k = -p_k (log p_k + H).
  std::vector<double> dlogits(p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    dlogits[k] = p[k] > 0.0 ? -scale * p[k] * (std::log(p[k]) + h) : 0.0;
  }
  backpropagate(z, dlogits, gradient);
}

void RlPolicy::backpropagate(std::span<const double> z, const std::vector<double>& dlogits,
                             std::span<double> gradient) const {
  if (static_cast<int>(gradient.size()) != parameter_count()) {
    throw_invalid("rl policy: gradient of the wrong size");
  }
  std::vector<double> h;
  hidden_layer(z, h);
  const ptrdiff_t w1_size = static_cast<ptrdiff_t>(hidden_) * inputs_;
  const ptrdiff_t w2_offset = w1_size + hidden_;
  const ptrdiff_t b2_offset = w2_offset + static_cast<ptrdiff_t>(devices_) * hidden_;
  const ptrdiff_t a_offset = b2_offset + devices_;
  const double* w2 = parameters_.data() + w2_offset;
  std::vector<double> dh(static_cast<size_t>(hidden_), 0.0);
  for (int k = 0; k < devices_; ++k) {
    const double g = dlogits[static_cast<size_t>(k)];
    gradient[static_cast<size_t>(b2_offset + k)] += g;
    const size_t c = static_cast<size_t>(inputs_ + k * candidates_);
    for (int j = 0; j < candidates_; ++j) {
      gradient[static_cast<size_t>(a_offset + j)] += g * z[c + static_cast<size_t>(j)];
    }
    for (int j = 0; j < hidden_; ++j) {
      const ptrdiff_t at = static_cast<ptrdiff_t>(k) * hidden_ + j;
      gradient[static_cast<size_t>(w2_offset + at)] += g * h[static_cast<size_t>(j)];
      dh[static_cast<size_t>(j)] += g * w2[at];
    }
  }
  for (int j = 0; j < hidden_; ++j) {
    const double hj = h[static_cast<size_t>(j)];
    const double da = dh[static_cast<size_t>(j)] * (1.0 - hj * hj);  // tanh'
    gradient[static_cast<size_t>(w1_size + j)] += da;
    for (int i = 0; i < inputs_; ++i) {
      gradient[static_cast<size_t>(static_cast<ptrdiff_t>(j) * inputs_ + i)] +=
          da * z[static_cast<size_t>(i)];
    }
  }
}

}  // namespace interplace::placement
