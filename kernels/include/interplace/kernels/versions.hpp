// Versions of the libraries behind the kernels, for result-file provenance. The kernel
// library links oneDNN privately, so its version has to come from here.
#pragma once

#include <string>

namespace interplace::kernels {

// "2.7.3" (oneDNN's dnnl_version() of the library loaded at run time).
std::string onednn_version();

}  // namespace interplace::kernels
