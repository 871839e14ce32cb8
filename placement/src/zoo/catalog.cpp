#include <functional>

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
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"resnet20", "resnet", "CIFAR ResNet-20, 16/32/64 channels, 1x28x28 input", 272186},
       [](const ModelOptions& o) { return zoo::build_cifar_resnet("resnet20", 3, o); }},
      {{"resnet56", "resnet", "CIFAR ResNet-56, 16/32/64 channels, 1x28x28 input", 855482},
       [](const ModelOptions& o) { return zoo::build_cifar_resnet("resnet56", 9, o); }},
      {{"resnet110", "resnet", "CIFAR ResNet-110, 16/32/64 channels, 1x28x28 input", 1730426},
       [](const ModelOptions& o) { return zoo::build_cifar_resnet("resnet110", 18, o); }},
      {{"gpt", "gpt", "GPT decoder-only LM, sizes from the options; defaults as gpt2-small",
        124439808},
       [](const ModelOptions& o) { return zoo::build_gpt("gpt", kGpt2Small, o); }},
      {{"gpt2-small", "gpt",
        "GPT-2 small: 12 layers, 768 dim, 12 heads, 50257 tokens, 1024 positions, tied head",
        124439808},
       [](const ModelOptions& o) { return zoo::build_gpt("gpt2-small", kGpt2Small, o); }},
      // Our count: 2*256*128 embeddings + 4 blocks of 12 d^2 + 13 d + final LayerNorm 2 d.
      {{"gpt-mini", "gpt",
        "GPT with 4 layers, 128 dim, 4 heads, byte-level 256 tokens, 256 positions", 858880},
       [](const ModelOptions& o) { return zoo::build_gpt("gpt-mini", kGptMini, o); }},
      {{"bert_base", "bert",
        "BERT-base encoder and pooler: 12 layers, 768 dim, 12 heads, 30522 tokens, 512 "
        "positions, 2 token types",
        109482240},
       [](const ModelOptions& o) { return zoo::build_bert("bert_base", kBertBase, o); }},
      // Our count: (256+256+2)*128 embeddings + LayerNorm 2 d + 4 layers of 12 d^2 + 13 d +
      // pooler d^2 + d.
      {{"bert-mini", "bert",
        "BERT with 4 layers, 128 dim, 4 heads, byte-level 256 tokens, 256 positions", 875648},
       [](const ModelOptions& o) { return zoo::build_bert("bert-mini", kBertMini, o); }},
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

Graph build_model(std::string_view name, const ModelOptions& options) {
  for (const Entry& e : entries()) {
    if (e.info.name == name) return e.build(options);
  }
  std::string valid;
  for (const Entry& e : entries()) valid += (valid.empty() ? "" : ", ") + e.info.name;
  throw_invalid("unknown model '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace interplace::placement
