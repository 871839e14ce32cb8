#include "gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/random.hpp"

namespace interplace::kernels::testing {

namespace {

double weighted_sum(const Tensor& y, const Tensor& r) {
  double sum = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) sum += static_cast<double>(y.data()[i]) * r.data()[i];
  return sum;
}

std::vector<int64_t> sample_indices(int64_t count, int limit, Rng& rng) {
  std::vector<int64_t> all(static_cast<size_t>(count));
  std::iota(all.begin(), all.end(), 0);
  if (count <= limit) return all;
  for (int64_t i = 0; i < limit; ++i) {  // partial Fisher-Yates
    const auto j = i + static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(count - i));
    std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(j)]);
  }
  all.resize(static_cast<size_t>(limit));
  return all;
}

// Compares the numerical derivative of L with respect to `values` against `analytic`.
::testing::AssertionResult compare(const std::string& what, Tensor& values, const Tensor& analytic,
                                   const std::function<double()>& loss,
                                   const GradCheckOptions& options, Rng& rng) {
  if (!analytic.defined() || analytic.numel() != values.numel()) {
    return ::testing::AssertionFailure()
           << what << ": analytic gradient missing or of the wrong size";
  }
  double diff2 = 0.0, numeric2 = 0.0, analytic2 = 0.0;
  double worst = 0.0;
  int64_t worst_index = -1;
  double worst_numeric = 0.0, worst_analytic = 0.0;
  for (int64_t i : sample_indices(values.numel(), options.max_elements, rng)) {
    float& v = values.data()[i];
    const float original = v;
    v = static_cast<float>(original + options.step);
    const double plus = loss();
    v = static_cast<float>(original - options.step);
    const double minus = loss();
    v = original;
    const double numeric = (plus - minus) / (2.0 * options.step);
    const double exact = analytic.data()[i];
    diff2 += (numeric - exact) * (numeric - exact);
    numeric2 += numeric * numeric;
    analytic2 += exact * exact;
    if (std::abs(numeric - exact) > worst) {
      worst = std::abs(numeric - exact);
      worst_index = i;
      worst_numeric = numeric;
      worst_analytic = exact;
    }
  }
  const double scale = std::max({std::sqrt(numeric2), std::sqrt(analytic2), 1e-8});
  const double error = std::sqrt(diff2) / scale;
  if (error > options.tolerance) {
    return ::testing::AssertionFailure()
           << what << ": relative gradient error " << error << " > " << options.tolerance
           << " (worst at element " << worst_index << ": numeric " << worst_numeric << ", analytic "
           << worst_analytic << ")";
  }
  return ::testing::AssertionSuccess();
}

// A value no write, overwrite or accumulation of a parameter gradient would leave alone.
constexpr float kGradMarker = 0.25f;

// Sets every parameter gradient of `params` to the marker.
void mark_grads(const std::vector<Parameter*>& params) {
  for (Parameter* p : params) {
    p->grad = Tensor(p->value.shape());
    for (int64_t e = 0; e < p->grad.numel(); ++e) p->grad.data()[e] = kGradMarker;
    p->grad_is_zero = false;
  }
}

// Whether `p`'s gradient still holds the marker everywhere.
bool grad_still_marked(const Parameter& p) {
  bool same = !p.grad_is_zero && p.grad.defined() && p.grad.numel() == p.value.numel();
  for (int64_t e = 0; same && e < p.grad.numel(); ++e) same = p.grad.data()[e] == kGradMarker;
  return same;
}

// Gradients::inputs_only must give the same input gradients as the full backward and leave
// every parameter gradient exactly as it was: each is set to the marker first, then checked
// and restored.
::testing::AssertionResult inputs_only_matches(Layer& layer, const std::vector<Tensor>& inputs,
                                               const Tensor& r,
                                               const std::vector<Tensor>& full_input_grads,
                                               const std::function<void()>& prepare) {
  const std::vector<Parameter*> params = layer.parameters();
  std::vector<std::pair<Tensor, bool>> kept;
  for (Parameter* p : params) kept.emplace_back(p->grad, p->grad_is_zero);
  mark_grads(params);
  Context ctx;
  prepare();
  layer.forward(inputs, ctx);
  const std::vector<Tensor> grads = layer.backward(r, ctx, Gradients::inputs_only);
  std::string changed;
  for (size_t k = 0; k < params.size(); ++k) {
    Parameter& p = *params[k];
    if (!grad_still_marked(p) && changed.empty()) changed = p.name;
    p.grad = kept[k].first;
    p.grad_is_zero = kept[k].second;
  }
  if (!changed.empty()) {
    return ::testing::AssertionFailure()
           << layer.type() << "." << changed << ": a backward for the inputs only changed it";
  }
  if (grads.size() != full_input_grads.size()) {
    return ::testing::AssertionFailure()
           << layer.type() << " inputs_only returned " << grads.size() << " input gradients";
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined() != full_input_grads[i].defined()) {
      return ::testing::AssertionFailure()
             << layer.type() << " inputs_only: input " << i << " gradient defined differently";
    }
    if (!grads[i].defined()) continue;
    for (int64_t e = 0; e < grads[i].numel(); ++e) {
      const double a = grads[i].data()[e], b = full_input_grads[i].data()[e];
      if (!(std::abs(a - b) <= 1e-6 + 1e-5 * std::abs(b))) {
        return ::testing::AssertionFailure()
               << layer.type() << " inputs_only: input " << i << " element " << e << " is " << a
               << ", the full backward gave " << b;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// |a - b| <= 1e-6 |b| (and a tiny floor for values that cancel to about zero) for every
// element: the two passes run the same kernels on the same operands, so they agree to
// rounding at most.
::testing::AssertionResult same_values(const std::string& what, const Tensor& actual,
                                       const Tensor& expected) {
  if (actual.defined() != expected.defined()) {
    return ::testing::AssertionFailure() << what << ": defined differently";
  }
  if (!actual.defined()) return ::testing::AssertionSuccess();
  if (actual.numel() != expected.numel()) {
    return ::testing::AssertionFailure()
           << what << ": " << actual.numel() << " elements, expected " << expected.numel();
  }
  for (int64_t e = 0; e < actual.numel(); ++e) {
    const double a = actual.data()[e], b = expected.data()[e];
    if (!(std::abs(a - b) <= 1e-12 + 1e-6 * std::abs(b))) {
      return ::testing::AssertionFailure()
             << what << " element " << e << " is " << a << ", the full backward gave " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// Gradients::inputs_deferring_parameters then backward_parameters must give the full
// backward's input gradients and, between them, leave every parameter gradient as it was
// (a marker value); the parameter pass must then give the full backward's parameter
// gradients, and a second parameter pass must be refused.
::testing::AssertionResult deferred_matches(Layer& layer, const std::vector<Tensor>& inputs,
                                            const Tensor& r,
                                            const std::vector<Tensor>& full_input_grads,
                                            const std::vector<Tensor>& full_param_grads,
                                            const std::function<void()>& prepare) {
  const std::vector<Parameter*> params = layer.parameters();
  mark_grads(params);
  Context ctx;
  prepare();
  layer.forward(inputs, ctx);
  const std::vector<Tensor> grads = layer.backward(r, ctx, Gradients::inputs_deferring_parameters);
  for (Parameter* p : params) {
    if (!grad_still_marked(*p)) {
      return ::testing::AssertionFailure()
             << layer.type() << "." << p->name << ": the deferring input pass changed it";
    }
  }
  if (grads.size() != full_input_grads.size()) {
    return ::testing::AssertionFailure()
           << layer.type() << " deferring pass returned " << grads.size() << " input gradients";
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    auto result = same_values(layer.type() + " deferring pass: input " + std::to_string(i),
                              grads[i], full_input_grads[i]);
    if (!result) return result;
  }
  layer.zero_grad();
  layer.backward_parameters(ctx);
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->grad_is_zero) {
      return ::testing::AssertionFailure()
             << layer.type() << "." << params[k]->name << ": the parameter pass left it zero";
    }
    auto result = same_values(layer.type() + " parameter pass: " + params[k]->name, params[k]->grad,
                              full_param_grads[k]);
    if (!result) return result;
  }
  try {
    layer.backward_parameters(ctx);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::invalid_input) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << layer.type() << ": a second backward_parameters was not refused";
}

}  // namespace

Tensor random_tensor(const Shape& shape, uint64_t seed, float stddev) {
  Rng rng(seed);
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.normal(0.0f, stddev);
  return t;
}

::testing::AssertionResult check_gradients(Layer& layer, std::vector<Tensor> inputs,
                                           const GradCheckOptions& options) {
  const auto prepare = [&] {
    if (options.before_forward) options.before_forward();
  };
  Context ctx;
  prepare();
  const Tensor y = layer.forward(inputs, ctx);
  const Tensor r = random_tensor(y.shape(), options.seed);
  layer.zero_grad();
  const std::vector<Tensor> input_grads = layer.backward(r, ctx);
  if (input_grads.size() != inputs.size()) {
    return ::testing::AssertionFailure() << layer.type() << " returned " << input_grads.size()
                                         << " input gradients for " << inputs.size() << " inputs";
  }
  // Copy analytic parameter gradients before the finite-difference forwards run.
  std::vector<Tensor> param_grads;
  for (Parameter* p : layer.parameters()) {
    if (p->grad_is_zero) {
      return ::testing::AssertionFailure()
             << layer.type() << "." << p->name << " received no gradient";
    }
    param_grads.push_back(p->grad.clone());
  }

  if (auto result = inputs_only_matches(layer, inputs, r, input_grads, prepare); !result) {
    return result;
  }
  if (auto result = deferred_matches(layer, inputs, r, input_grads, param_grads, prepare);
      !result) {
    return result;
  }

  const auto loss = [&] {
    Context scratch;
    prepare();
    return weighted_sum(layer.forward(inputs, scratch), r);
  };
  Rng rng(options.seed + 1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!options.differentiable.empty() && !options.differentiable[i]) continue;
    auto result = compare(layer.type() + " input " + std::to_string(i), inputs[i], input_grads[i],
                          loss, options, rng);
    if (!result) return result;
  }
  const std::vector<Parameter*> params = layer.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto result = compare(layer.type() + "." + params[i]->name, params[i]->value, param_grads[i],
                          loss, options, rng);
    if (!result) return result;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult backward_accumulates(Layer& layer, const Tensor& x, uint64_t seed) {
  Context ctx;
  const Tensor y = layer.forward(x, ctx);
  const Tensor dy = random_tensor(y.shape(), seed);
  layer.zero_grad();
  layer.backward(dy, ctx);
  std::vector<Tensor> once;
  for (Parameter* p : layer.parameters()) once.push_back(p->grad.clone());
  layer.backward(dy, ctx);
  const std::vector<Parameter*> params = layer.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    for (int64_t i = 0; i < once[k].numel(); ++i) {
      const double expected = 2.0 * once[k].data()[i];
      const double actual = params[k]->grad.data()[i];
      if (std::abs(actual - expected) > 1e-6 + 1e-5 * std::abs(expected)) {
        return ::testing::AssertionFailure()
               << layer.type() << "." << params[k]->name << " element " << i << ": " << actual
               << " after two backward calls, expected " << expected;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     double rtol, double atol) {
  if (actual.numel() != static_cast<int64_t>(expected.size())) {
    return ::testing::AssertionFailure()
           << "size " << actual.numel() << " vs expected " << expected.size();
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.data()[i];
    const double e = expected[static_cast<size_t>(i)];
    if (!(std::abs(a - e) <= atol + rtol * std::abs(e))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs expected " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace interplace::kernels::testing
