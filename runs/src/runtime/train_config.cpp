#include <sstream>

#include "interplace/runs/training.hpp"

namespace interplace::runs {

std::string TrainConfig::display_name() const {
  std::ostringstream name;
  name << model << ' ' << order << ' ' << placer << " K=" << devices << ' ' << strategy;
  if (strategy == "global") name << '/' << pipeline;
  if (interlock_mode != "single") name << '/' << interlock_mode;
  name << " M=" << micro_batches << " B=" << batch_size;
  return name.str();
}

}  // namespace interplace::runs
