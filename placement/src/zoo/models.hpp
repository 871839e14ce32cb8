// The builders behind the catalog, one file per family. `name` becomes the graph's name.
#pragma once

#include <cstdint>
#include <string_view>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/zoo.hpp"
#include "transformer_config.hpp"

namespace interplace::placement::zoo {

Graph build_cifar_resnet(std::string_view name, int64_t blocks_per_stage,
                         const ModelOptions& options);
Graph build_gpt(std::string_view name, const TransformerConfig& preset,
                const ModelOptions& options);
Graph build_bert(std::string_view name, const TransformerConfig& preset,
                 const ModelOptions& options);
// The interlocking-backpropagation study's ResNet (resnet_cifar.cpp).
Graph build_study_resnet(std::string_view name, const ModelOptions& options);
Graph build_resnet50(std::string_view name, const ModelOptions& options);
Graph build_vgg16(std::string_view name, const ModelOptions& options);
Graph build_mobilenet_v2(std::string_view name, const ModelOptions& options);
Graph build_inception_v3(std::string_view name, const ModelOptions& options);
Graph build_nasnet_a_mobile(std::string_view name, const ModelOptions& options);
// The seeded families (docs/models.md): `seed` draws the architecture (enas-cnn,
// enas-rnn) or the shape (nmt).
Graph build_enas_cnn(std::string_view name, const ModelOptions& options, uint64_t seed);
Graph build_enas_rnn(std::string_view name, const ModelOptions& options, uint64_t seed);
Graph build_nmt(std::string_view name, const ModelOptions& options, uint64_t seed);

}  // namespace interplace::placement::zoo
