// Names chosen from a fixed set (models, orders, strategies, data sets...): one message
// format everywhere, "unknown order 'bfs2' (valid: topo, topo-rev, ...)".
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "interplace/kernels/error.hpp"

namespace interplace::runs {

inline std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Throws invalid_input naming `what`, the value and the valid choices.
inline void require_name(const std::string& what, const std::string& value,
                         const std::vector<std::string>& valid) {
  if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
    throw_invalid("unknown " + what + " '" + value + "' (valid: " + join_names(valid) + ")");
  }
}

}  // namespace interplace::runs
