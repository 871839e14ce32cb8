// Sizes of a Transformer model (gpt, bert): a preset, overridden by ModelOptions.
#pragma once

#include <cstdint>
#include <string_view>

#include "interplace/placement/zoo.hpp"

namespace interplace::placement::zoo {

struct TransformerConfig {
  int64_t layers = 0;
  int64_t dim = 0;
  int64_t heads = 0;
  int64_t vocab_size = 0;
  int64_t max_positions = 0;
  int64_t sequence_length = 0;  // 0 = max_positions
};

// The preset with the options applied: set sizes replace the preset's, then the width
// and depth multipliers scale dim and layers. Throws invalid_input naming the model for
// bad generic options, image options, a dim not divisible by the heads, or a sequence
// longer than max_positions.
TransformerConfig resolve_transformer(std::string_view model, const TransformerConfig& preset,
                                      const ModelOptions& options);

}  // namespace interplace::placement::zoo
