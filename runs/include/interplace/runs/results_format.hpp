// The identity of result files (docs/results-format.md): readers and merge refuse others.
#pragma once

#include <cstdint>
#include <string>

namespace interplace::runs {

inline constexpr const char* kResultsFormatName = "interplace-results";
// The version this interplace writes; it reads every version from kOldestResultsFormatVersion
// on (docs/results-format.md, "Versioning").
inline constexpr int64_t kResultsFormatVersion = 3;
inline constexpr int64_t kOldestResultsFormatVersion = 1;

// Throws invalid_input naming the file, what it holds and what is supported.
void require_supported_results_format(const std::string& path, const std::string& format_name,
                                      int64_t format_version);

}  // namespace interplace::runs
