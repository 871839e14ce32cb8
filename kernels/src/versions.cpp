#include "interplace/kernels/versions.hpp"

#include <oneapi/dnnl/dnnl.h>

namespace interplace::kernels {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace interplace::kernels
