#include <charconv>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/zoo.hpp"
#include "models.hpp"

namespace interplace::placement {

namespace {

// Transformer presets; the sequence length defaults to max_positions. The minis use the
// byte-level vocabulary of the suite's text corpus and train on a few CPU cores.
constexpr zoo::TransformerConfig kGpt2Small{
    .layers = 12, .dim = 768, .heads = 12, .vocab_size = 50257, .max_positions = 1024};
constexpr zoo::TransformerConfig kGptMini{
    .layers = 4, .dim = 128, .heads = 4, .vocab_size = 256, .max_positions = 256};
constexpr zoo::TransformerConfig kBertBase{
    .layers = 12, .dim = 768, .heads = 12, .vocab_size = 30522, .max_positions = 512};
constexpr zoo::TransformerConfig kBertMini{
    .layers = 4, .dim = 128, .heads = 4, .vocab_size = 256, .max_positions = 256};

struct Entry {
  ModelInfo info;
  std::function<Graph(const ModelOptions&)> build;
  // Seeded families only: the graph of a seed (`build` is seed 0's).
  std::function<Graph(const ModelOptions&, uint64_t)> build_seeded = {};
};

// The caller's options over a preset's: set sizes win, multipliers multiply.
ModelOptions over_preset(const ModelOptions& caller, ModelOptions preset) {
  preset.batch_size = caller.batch_size;
  for (auto field :
       {&ModelOptions::in_channels, &ModelOptions::image_size, &ModelOptions::classes,
        &ModelOptions::sequence_length, &ModelOptions::layers, &ModelOptions::dim,
        &ModelOptions::heads, &ModelOptions::vocab_size, &ModelOptions::max_positions}) {
    if (caller.*field != 0) preset.*field = caller.*field;
  }
  preset.width_multiplier *= caller.width_multiplier;
  preset.depth_multiplier *= caller.depth_multiplier;
  return preset;
}

using Builder = Graph (*)(std::string_view, const ModelOptions&);

// A catalog entry for `build` at the preset's options; its count has no published source.
Entry preset(ModelInfo info, Builder build, ModelOptions options) {
  info.published_reference = false;
  const std::string name = info.name;
  return {std::move(info),
          [=](const ModelOptions& o) { return build(name, over_preset(o, options)); }};
}

using SeededBuilder = Graph (*)(std::string_view, const ModelOptions&, uint64_t);

// A seeded family at `preset` options (all zero: the family's own defaults); graphs are
// named "NAME:SEED".
Entry family(ModelInfo info, SeededBuilder build, ModelOptions options = {}) {
  info.published_reference = false;
  info.seeded = true;
  const std::string name = info.name;
  auto seeded = [=](const ModelOptions& o, uint64_t seed) {
    return build(name + ":" + std::to_string(seed), over_preset(o, options), seed);
  };
  return {std::move(info), [=](const ModelOptions& o) { return seeded(o, 0); }, seeded};
}

// A catalog entry for `build` at its own defaults.
Entry model(ModelInfo info, Builder build) {
  const std::string name = info.name;
  return {std::move(info), [=](const ModelOptions& o) { return build(name, o); }};
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"resnet20", "resnet", "CIFAR ResNet-20, 16/32/64 channels, 1x28x28 input", 272186},
       [](const ModelOptions& o) { return zoo::build_cifar_resnet("resnet20", 3, o); }},
      {{"resnet56", "resnet", "CIFAR ResNet-56, 16/32/64 channels, 1x28x28 input", 855482},
       [](const ModelOptions& o) { return zoo::build_cifar_resnet("resnet56", 9, o); }},
      {{"resnet110", "resnet", "CIFAR ResNet-110, 16/32/64 channels, 1x28x28 input", 1730426},
       [](const ModelOptions& o) { return zoo::build_cifar_resnet("resnet110", 18, o); }},
      // PyTorch's count of the same network at 3x32x32 (CIFAR-10) is 21282122: the stem
      // reads 3 channels, 2 x 64 x 9 = 1152 weights more (tests/placement/test_zoo.cpp).
      model({"resnet34-cifar", "resnet",
             "the interlocking-backprop study's ResNet: basic blocks, 64/128/256/512 channels "
             "x 3/4/6/3 blocks, 3x3 stem, 1x28x28 input (image_size=32, in_channels=3: CIFAR)",
             21280970},
            zoo::build_study_resnet),
      model({"resnet50", "resnet", "ImageNet ResNet-50 (torchvision), 3x224x224, 1000 classes",
             25557032},
            zoo::build_resnet50),
      model({"vgg16", "vgg", "VGG-16 (torchvision, classifier dropout), 3x224x224, 1000 classes",
             138357544},
            zoo::build_vgg16),
      model({"mobilenet_v2", "mobilenet", "MobileNetV2 (torchvision), 3x224x224, 1000 classes",
             3504872},
            zoo::build_mobilenet_v2),
      model({"inception_v3", "inception",
             "Inception-v3 (torchvision, no auxiliary logits), 3x299x299, 1000 classes", 23834568},
            zoo::build_inception_v3),
      model({"nasnet_a_mobile", "nasnet",
             "NASNet-A Mobile (Keras NASNetMobile), 3x224x224, 1000 classes; reference "
             "includes batch-norm statistics",
             5326716, true, true},
            zoo::build_nasnet_a_mobile),
      preset(
          {"resnet50-small", "resnet",
           "ResNet-50 at width 1/4, 1-1-2-1 bottlenecks, 3x32x32, 10 classes", 581914},
          zoo::build_resnet50,
          {.image_size = 32, .classes = 10, .width_multiplier = 0.25, .depth_multiplier = 1.0 / 3}),
      preset({"vgg16-small", "vgg", "VGG-16 at width 1/8, 3x32x32, 10 classes", 531634},
             zoo::build_vgg16, {.image_size = 32, .classes = 10, .width_multiplier = 0.125}),
      preset({"mobilenet_v2-small", "mobilenet",
              "MobileNetV2 at width 1/4 and half depth, 3x32x32, 10 classes", 208170},
             zoo::build_mobilenet_v2,
             {.image_size = 32, .classes = 10, .width_multiplier = 0.25, .depth_multiplier = 0.5}),
      preset({"inception_v3-small", "inception",
              "Inception-v3 at width 1/8, 2 A / 2 C / 1 E modules, 3x75x75, 10 classes", 193002},
             zoo::build_inception_v3,
             {.image_size = 75, .classes = 10, .width_multiplier = 0.125, .depth_multiplier = 0.5}),
      preset({"nasnet_a_mobile-small", "nasnet",
              "NASNet-A Mobile with 12 filters and N = 1, 3x32x32, 10 classes", 139532},
             zoo::build_nasnet_a_mobile,
             {.image_size = 32, .classes = 10, .width_multiplier = 0.25, .depth_multiplier = 0.25}),
      {{"gpt", "gpt", "GPT decoder-only LM, sizes from the options; defaults as gpt2-small",
        124439808},
       [](const ModelOptions& o) { return zoo::build_gpt("gpt", kGpt2Small, o); }},
      {{"gpt2-small", "gpt",
        "GPT-2 small: 12 layers, 768 dim, 12 heads, 50257 tokens, 1024 positions, tied head",
        124439808},
       [](const ModelOptions& o) { return zoo::build_gpt("gpt2-small", kGpt2Small, o); }},
      // Our count: 2*256*128 embeddings + 4 blocks of 12 d^2 + 13 d + final LayerNorm 2 d.
      {{"gpt-mini", "gpt",
        "GPT with 4 layers, 128 dim, 4 heads, byte-level 256 tokens, 256 positions", 858880, false},
       [](const ModelOptions& o) { return zoo::build_gpt("gpt-mini", kGptMini, o); }},
      {{"bert_base", "bert",
        "BERT-base encoder and pooler: 12 layers, 768 dim, 12 heads, 30522 tokens, 512 "
        "positions, 2 token types",
        109482240},
       [](const ModelOptions& o) { return zoo::build_bert("bert_base", kBertBase, o); }},
      // Our count: (256+256+2)*128 embeddings + LayerNorm 2 d + 4 layers of 12 d^2 + 13 d +
      // pooler d^2 + d.
      {{"bert-mini", "bert",
        "BERT with 4 layers, 128 dim, 4 heads, byte-level 256 tokens, 256 positions", 875648,
        false},
       [](const ModelOptions& o) { return zoo::build_bert("bert-mini", kBertMini, o); }},
      // The families of the device-placement literature (docs/models.md), one graph per seed.
      family({"enas-cnn", "enas-cnn",
              "ENAS micro-search CNN (Pham et al. 2018): seeded normal and reduction cells of 5 "
              "nodes, 2 normal cells per stage, width 20, 3x32x32, 10 classes",
              332510},
             zoo::build_enas_cnn),
      family({"enas-cnn-small", "enas-cnn",
              "enas-cnn with 1 normal cell per stage, width 8, 1x28x28 (Fashion-MNIST)", 44946},
             zoo::build_enas_cnn,
             {.in_channels = 1, .image_size = 28, .layers = 1, .width_multiplier = 0.4}),
      family({"enas-rnn", "enas-rnn",
              "ENAS recurrent cell (Pham et al. 2018): a seeded 12-node cell unrolled over 35 "
              "steps, weights shared across steps, dim 256, byte-level 256 tokens",
              1844224},
             zoo::build_enas_rnn),
      family({"enas-rnn-small", "enas-rnn", "enas-rnn with a 6-node cell, 8 steps, dim 32", 31232},
             zoo::build_enas_rnn, {.sequence_length = 8, .dim = 32, .depth_multiplier = 0.5}),
      family({"nmt", "nmt",
              "attention encoder-decoder, LSTM layers unrolled over time; the seed draws 1-4 "
              "layers per side, dim 64-512, 8-24 steps; byte-level 256 tokens",
              321920},
             zoo::build_nmt),
      family({"nmt-small", "nmt", "nmt with 1 layer per side, dim 32, 8 steps", 43776},
             zoo::build_nmt, {.sequence_length = 8, .layers = 1, .dim = 32}),
  };
  return table;
}

}  // namespace

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> infos = [] {
    std::vector<ModelInfo> all;
    for (const Entry& e : entries()) all.push_back(e.info);
    return all;
  }();
  return infos;
}

namespace {

std::string valid_names() {
  std::string valid;
  for (const Entry& e : entries()) {
    valid += (valid.empty() ? "" : ", ") + e.info.name + (e.info.seeded ? "[:SEED]" : "");
  }
  return valid;
}

uint64_t parse_seed(std::string_view model, std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      value > std::numeric_limits<uint32_t>::max()) {
    throw_invalid("model " + std::string(model) + ": seed '" + std::string(text) +
                  "' must be a decimal integer in 0..4294967295");
  }
  return value;
}

struct Resolved {
  const Entry* entry;
  std::optional<uint64_t> seed;
};

Resolved resolve(std::string_view name) {
  const size_t colon = name.find(':');
  const std::string_view base = name.substr(0, colon);
  for (const Entry& e : entries()) {
    if (e.info.name != base) continue;
    if (colon == std::string_view::npos) return {&e, std::nullopt};
    if (!e.info.seeded) {
      throw_invalid("model " + std::string(base) + " is no seeded family: '" + std::string(name) +
                    "' names a seed it does not take");
    }
    return {&e, parse_seed(name, name.substr(colon + 1))};
  }
  throw_invalid("unknown model '" + std::string(name) + "' (valid: " + valid_names() + ")");
}

}  // namespace

const ModelInfo& find_model(std::string_view name) {
  return resolve(name).entry->info;
}

std::vector<std::string> expand_model_names(std::string_view pattern) {
  const size_t dots = pattern.find("..");
  if (dots == std::string_view::npos) {
    find_model(pattern);
    return {std::string(pattern)};
  }
  const size_t colon = pattern.find(':');
  if (colon == std::string_view::npos || colon > dots) {
    throw_invalid("model set '" + std::string(pattern) + "' must read NAME:FIRST..LAST");
  }
  const std::string base(pattern.substr(0, colon));
  const uint64_t first = parse_seed(pattern, pattern.substr(colon + 1, dots - colon - 1));
  const uint64_t last = parse_seed(pattern, pattern.substr(dots + 2));
  if (last < first || last - first >= 4096) {
    throw_invalid("model set '" + std::string(pattern) +
                  "': FIRST..LAST must be ascending and at most 4096 seeds");
  }
  std::vector<std::string> names;
  for (uint64_t seed = first; seed <= last; ++seed) {
    names.push_back(base + ":" + std::to_string(seed));
    find_model(names.back());
  }
  return names;
}

Graph build_model(std::string_view name, const ModelOptions& options) {
  const Resolved resolved = resolve(name);
  {
    const Entry& e = *resolved.entry;
    // The caller's options first (a preset multiplies the multipliers, so that inf
    // would otherwise be checked as a product); the builders check the merged ones.
    try {
      check_model_options(options);
    } catch (const Error& error) {
      throw_invalid("model " + std::string(name) + ": " + error.what());
    }
    if (resolved.seed) return e.build_seeded(options, *resolved.seed);
    return e.build(options);
  }
}

}  // namespace interplace::placement
