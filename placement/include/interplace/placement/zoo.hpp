// The model zoo: real networks as layer graphs. Every node is an op of the kernel library
// with its attributes; its output shape, FLOPs and parameter count come from the kernel
// layer itself (make_layer), so graphs and real training never disagree.
//
// Tied weights (GPT's LM head shares the token embedding table): the head is a
// "tied_linear" node with parameter_count 0 and string attributes "tied_to" (the name of
// the node owning the weight, e.g. "embed") and "tied_parameter" (the owner's parameter,
// "token_table"). Whoever runs the graph must:
//   - on one rank: bind the head (kernels::TiedLinear::bind) to the owner layer's
//     parameter; both layers then add their gradients into it and the optimiser steps it
//     once, through the owner;
//   - across ranks: treat the owner's copy as authoritative. The head's rank keeps a
//     replica (count its memory there: it is not in parameter_count), receives the
//     owner's values before the first step and after every update, and sends its
//     gradient contribution to the owner, which adds it before the optimiser step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/placement/graph.hpp"

namespace interplace::placement {

// Unset (0) fields take the model's defaults.
struct ModelOptions {
  int64_t batch_size = 1;
  // Image models.
  int64_t in_channels = 0;
  int64_t image_size = 0;
  int64_t classes = 0;
  // Sequence models (gpt, bert). sequence_length defaults to max_positions; `classes` on
  // a BERT model adds a "classifier" Linear on the pooled output (default: none).
  int64_t sequence_length = 0;
  int64_t layers = 0;         // Transformer blocks
  int64_t dim = 0;            // model width; must stay divisible by heads
  int64_t heads = 0;          // attention heads
  int64_t vocab_size = 0;     // token vocabulary (256 = the byte-level text corpus)
  int64_t max_positions = 0;  // rows of the learned position table
  // Small variants: channel widths (or model dimension) times width_multiplier,
  // repeated blocks/layers times depth_multiplier (rounded, at least 1).
  double width_multiplier = 1.0;
  double depth_multiplier = 1.0;
};

// The model options a spec's [model_options] sets and the id names (ModelOptions but its
// batch size, which the configuration's batch_size and micro_batches decide), in the id's
// order; exactly one of `integer` (0: the model's default) and `real` (1: default) is set.
// Every one is also a flag of every subcommand that takes model options, the key with
// '-' for '_' (`layers` and `--layers`; runs/src/cli/model_options.cpp adds them from this
// table), and what check_graph_file_options refuses beside a graph file.
struct ModelOptionField {
  const char* key;
  int64_t ModelOptions::*integer;
  double ModelOptions::*real;
  const char* help;  // the flag's
};
inline constexpr ModelOptionField kModelOptionFields[] = {
    {"in_channels", &ModelOptions::in_channels, nullptr, "image channels (0: the model's default)"},
    {"image_size", &ModelOptions::image_size, nullptr, "image height and width (0: default)"},
    {"classes", &ModelOptions::classes, nullptr, "output classes (0: default)"},
    {"sequence_length", &ModelOptions::sequence_length, nullptr,
     "tokens per sequence (0: default)"},
    {"layers", &ModelOptions::layers, nullptr, "Transformer blocks (0: the model's default)"},
    {"dim", &ModelOptions::dim, nullptr,
     "Transformer model width, divisible by --heads (0: default)"},
    {"heads", &ModelOptions::heads, nullptr, "attention heads (0: default)"},
    {"vocab_size", &ModelOptions::vocab_size, nullptr,
     "token vocabulary (0: default; 256 = the byte-level text corpus)"},
    {"max_positions", &ModelOptions::max_positions, nullptr,
     "rows of the learned position table (0: default)"},
    {"width_multiplier", nullptr, &ModelOptions::width_multiplier, "scales channel widths"},
    {"depth_multiplier", nullptr, &ModelOptions::depth_multiplier, "scales repeated blocks"},
};

// The ranges of the options, checked in one place (check_model_options) by build_model,
// hence by every subcommand and sweep configuration before anything is built
// (docs/cli.md, "Model options"). They keep every derived size far from int64 overflow
// and graphs to a size planning can hold; whether the model then fits a rank's memory is
// planning's question, answered from the graph's shapes.
struct ModelOptionLimits {
  static constexpr int64_t batch_size = int64_t{1} << 20;
  static constexpr int64_t in_channels = 4096;
  static constexpr int64_t image_size = 8192;
  static constexpr int64_t classes = 1'000'000;
  static constexpr int64_t sequence_length = 65536;
  static constexpr int64_t layers = 4096;
  static constexpr int64_t dim = 65536;
  static constexpr int64_t heads = 4096;
  static constexpr int64_t vocab_size = 10'000'000;
  static constexpr int64_t max_positions = 65536;
  static constexpr double multiplier = 64.0;  // width and depth, each in (0, 64]
};

// Throws invalid_input naming the first option that is out of its range (above), not
// finite, or (for sizes) negative; 0 means the model's default.
void check_model_options(const ModelOptions& options);
// The multiplier part of it, for callers that read one value (the sweep spec parser):
// `name` is how the caller spells the option.
void check_multiplier(std::string_view name, double value);

struct ModelInfo {
  std::string name;
  std::string family;  // resnet, inception, vgg, mobilenet, nasnet, gpt, bert
  std::string description;
  // Parameter count at the default options: the published figure where there is one;
  // for resnet56/110 at 1x28x28 (no published figure) PyTorch's count of the same network;
  // for gpt-mini and bert-mini the architecture's closed-form count. Without a published
  // reference (the "-small" presets) it is the count the graph had when the preset was
  // added, so that a changed graph is noticed.
  int64_t reference_parameters;
  bool published_reference = true;
  // The reference also counts batch-norm running means and variances (2 x channels per
  // batch_norm node) because the source does: Keras' "Total params" (NASNetMobile's
  // 5,326,716) includes these non-trainable weights, while Graph::total_parameter_count()
  // counts trainable parameters only. Compare against trainable + buffer elements.
  bool reference_counts_batch_norm_statistics = false;
  // A family of seeded graphs (enas-cnn, enas-rnn, nmt and their -small presets): the
  // model is named "NAME:SEED" (SEED a decimal integer in 0..2^32-1; "NAME" alone is seed
  // 0), a set of them "NAME:FIRST..LAST" (expand_model_names). The reference count is
  // seed 0's.
  bool seeded = false;
};

// Presets ("vgg16-small") are a family model at other default options: the options a
// caller sets (> 0) override the preset's sizes, and the caller's multipliers multiply
// the preset's.
const std::vector<ModelInfo>& model_catalog();
// Throws invalid_input listing the valid names for an unknown model, and for options
// that do not fit it (an image too small for its downsampling, a sequence longer than
// its positions, options out of range: check_model_options).
Graph build_model(std::string_view name, const ModelOptions& options = {});

// The catalog entry of a model name, "NAME:SEED" of a seeded family included; throws
// invalid_input listing the valid names for an unknown one, a seed on a model that takes
// none, or a malformed seed.
const ModelInfo& find_model(std::string_view name);
// A model name or a set of a seeded family, "NAME:FIRST..LAST" (both inclusive, FIRST <=
// LAST, at most 4096 graphs), as the model names it stands for: "enas-cnn:0..31" is
// enas-cnn:0, ..., enas-cnn:31. Every name is checked as find_model checks it.
std::vector<std::string> expand_model_names(std::string_view pattern);

}  // namespace interplace::placement
