#include <functional>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/zoo.hpp"
#include "models.hpp"

namespace interplace::placement {

namespace {

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
