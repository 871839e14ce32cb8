#include "transformer_config.hpp"

#include <string>

#include "interplace/kernels/error.hpp"
#include "model_builder.hpp"

namespace interplace::placement::zoo {

TransformerConfig resolve_transformer(std::string_view model, const TransformerConfig& preset,
                                      const ModelOptions& options) {
  check_options(model, options);
  const std::string prefix = "model " + std::string(model) + ": ";
  if (options.in_channels > 0 || options.image_size > 0) {
    throw_invalid(prefix + "a sequence model takes no in_channels or image_size");
  }
  TransformerConfig c;
  c.layers = scaled_depth(or_default(options.layers, preset.layers), options);
  c.dim = scaled_width(or_default(options.dim, preset.dim), options);
  c.heads = or_default(options.heads, preset.heads);
  c.vocab_size = or_default(options.vocab_size, preset.vocab_size);
  c.max_positions = or_default(options.max_positions, preset.max_positions);
  c.sequence_length =
      or_default(options.sequence_length, or_default(preset.sequence_length, c.max_positions));
  if (c.dim % c.heads != 0) {
    throw_invalid(prefix + "dim " + std::to_string(c.dim) +
                  " (after the width multiplier) is not divisible by " + std::to_string(c.heads) +
                  " heads");
  }
  if (c.sequence_length > c.max_positions) {
    throw_invalid(prefix + "sequence length " + std::to_string(c.sequence_length) +
                  " exceeds max_positions " + std::to_string(c.max_positions));
  }
  return c;
}

}  // namespace interplace::placement::zoo
