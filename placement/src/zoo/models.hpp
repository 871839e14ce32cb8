// The builders behind the catalog, one file per family.
#pragma once

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

}  // namespace interplace::placement::zoo
