#include "interplace/runs/datasets.hpp"

namespace interplace::runs {

std::vector<std::string> dataset_names() { return {"fashion-mnist", "text", "synthetic"}; }

}  // namespace interplace::runs
