#include "interplace/runs/results_format.hpp"

#include "interplace/kernels/error.hpp"

namespace interplace::runs {

void require_supported_results_format(const std::string& path, const std::string& format_name,
                                      int64_t format_version) {
  if (format_name != kResultsFormatName) {
    throw_invalid(path + " is not an interplace result file (format_name '" + format_name +
                  "', expected '" + kResultsFormatName + "')");
  }
  if (format_version < kOldestResultsFormatVersion || format_version > kResultsFormatVersion) {
    throw_invalid(path + " has result format version " + std::to_string(format_version) +
                  "; this interplace reads versions " +
                  std::to_string(kOldestResultsFormatVersion) + " to " +
                  std::to_string(kResultsFormatVersion));
  }
}

}  // namespace interplace::runs
