// Validation of integer indices stored as floats (class labels, token ids): a bad one
// would otherwise index out of bounds, so every kernel that reads them checks first.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/tensor.hpp"

namespace interplace::kernels::cpu {

// Throws invalid_input unless every value of `indices` is an integer in [0, limit).
// `what` names the values in the message, e.g. "softmax_cross_entropy: label".
inline void check_indices(const Tensor& indices, int64_t limit, const std::string& what,
                          const std::string& limit_name) {
  const float* p = indices.data();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const float v = p[i];
    // Written so that NaN fails too.
    if (!(v >= 0.0f && v < static_cast<float>(limit) &&
          v == static_cast<float>(static_cast<int64_t>(v)))) {
      std::ostringstream message;
      message << what << " " << v << " at index " << i << " is not an integer in [0, " << limit
              << ") (" << limit_name << ")";
      throw_invalid(message.str());
    }
  }
}

}  // namespace interplace::kernels::cpu
