// The builders behind the catalog, one file per family.
#pragma once

#include <string_view>

#include "interplace/placement/graph.hpp"
#include "interplace/placement/zoo.hpp"

namespace interplace::placement::zoo {

Graph build_cifar_resnet(std::string_view name, int64_t blocks_per_stage,
                         const ModelOptions& options);

}  // namespace interplace::placement::zoo
