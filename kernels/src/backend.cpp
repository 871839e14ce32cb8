#include "interplace/kernels/backend.hpp"

#include <cstdio>
#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::kernels {

namespace {

Backend* backends[2] = {nullptr, nullptr};

// Rows and width of a gather/scatter, checked before the defaults reshape anything.
int64_t rows_width(const char* op, const Tensor& ids, const Tensor& table, const Tensor& rows) {
  if (table.rank() != 2 || rows.numel() != ids.numel() * table.dim(1)) {
    throw_invalid(std::string(op) + ": expected a table [V, D] and " + std::to_string(ids.numel()) +
                  " rows of D values (one per id), got table " + to_string(table.shape()) +
                  " and rows " + to_string(rows.shape()));
  }
  return table.dim(1);
}

}  // namespace

// Defined by the CPU backend (cpu/cpu_backend.cpp).
Backend& cpu_backend_instance();

std::string Conv2dGeometry::key() const {
  return "conv:" + std::to_string(batch) + "," + std::to_string(in_channels) + "," +
         std::to_string(in_height) + "," + std::to_string(in_width) + "," +
         std::to_string(out_channels) + "," + std::to_string(kernel_h) + "," +
         std::to_string(kernel_w) + "," + std::to_string(stride) + "," + std::to_string(padding_h) +
         "," + std::to_string(padding_w) + "," + std::to_string(groups);
}

std::string Pool2dGeometry::key() const {
  return std::string(kind == PoolKind::max ? "maxpool:" : "avgpool:") + std::to_string(batch) +
         "," + std::to_string(channels) + "," + std::to_string(in_height) + "," +
         std::to_string(in_width) + "," + std::to_string(kernel) + "," + std::to_string(stride) +
         "," + std::to_string(padding) + (count_include_pad ? ",incl" : "");
}

std::string Pad2dGeometry::key() const {
  return "pad:" + std::to_string(batch) + "," + std::to_string(channels) + "," +
         std::to_string(in_height) + "," + std::to_string(in_width) + "," + std::to_string(top) +
         "," + std::to_string(bottom) + "," + std::to_string(left) + "," + std::to_string(right);
}

std::string MatmulGeometry::key() const {
  // Scales in hex-float form: exact, so plans for nearby alphas never collide.
  char scales[64];
  std::snprintf(scales, sizeof scales, "%a,%a", static_cast<double>(alpha),
                static_cast<double>(beta));
  return "matmul:" + std::to_string(batch) + "," + std::to_string(m) + "," + std::to_string(n) +
         "," + std::to_string(k) + "," + (transpose_a ? "T" : "N") + (transpose_b ? "T" : "N") +
         "," + scales;
}

void Backend::gather_rows_add(const Tensor& ids, const Tensor& table, Tensor& y) {
  const int64_t width = rows_width("gather_rows_add", ids, table, y);
  const int64_t rows = ids.numel();
  // Each id is a sequence of length 1, so embedding_forward adds position row 0: zero.
  Tensor no_position({1, width}, device());
  fill(no_position, 0.0f);
  Tensor gathered({rows, 1, width}, device());
  embedding_forward(ids.reshaped({rows, 1}), table, no_position, gathered);
  Tensor y_rows = y.reshaped({rows, width});
  axpy(1.0f, gathered.reshaped({rows, width}), y_rows);
}

void Backend::scatter_rows_add(const Tensor& ids, const Tensor& dy, Tensor& dtable) {
  const int64_t width = rows_width("scatter_rows_add", ids, dtable, dy);
  const int64_t rows = ids.numel();
  Tensor discarded_position({1, width}, device());
  fill(discarded_position, 0.0f);
  embedding_backward(ids.reshaped({rows, 1}), dy.reshaped({rows, 1, width}), dtable,
                     discarded_position);
}

void register_backend(Device device, Backend* backend) {
  backends[static_cast<int>(device)] = backend;
}

Backend& backend_for(Device device) {
  if (device == Device::cpu) return cpu_backend_instance();
  Backend* backend = backends[static_cast<int>(device)];
  if (backend == nullptr) {
    throw_runtime("no " + to_string(device) +
                  " backend: interplace was built without it or no device is present");
  }
  return *backend;
}

void Backend::sgd_step_group(std::span<const SgdTensor> tensors, float lr, float momentum,
                             bool nesterov) {
  for (const SgdTensor& t : tensors) {
    Tensor none;
    sgd_step(*t.param, *t.grad, t.velocity != nullptr ? *t.velocity : none, lr, momentum,
             t.weight_decay, nesterov);
  }
}

void Backend::update_running_statistics(const Tensor& mean, const Tensor& variance, float momentum,
                                        float unbias, Tensor& running_mean, Tensor& running_var) {
  const float keep = 1.0f - momentum;
  scale(keep, running_mean);
  axpy(momentum, mean, running_mean);
  scale(keep, running_var);
  axpy(momentum * unbias, variance, running_var);
}

}  // namespace interplace::kernels
