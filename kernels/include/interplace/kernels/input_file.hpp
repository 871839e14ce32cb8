// One check for every file the suite reads as input (profiles, sweep specs, data sets,
// result files): it must be a regular file (not a directory, /dev/zero or a FIFO, which
// reading "to the end" would hang on or fill memory with) of at most `max_bytes`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace interplace {

// Sizes that comfortably hold every real input of its kind.
inline constexpr int64_t kMaxTextInputBytes = int64_t{64} << 20;    // profiles, specs
inline constexpr int64_t kMaxDataInputBytes = int64_t{1} << 30;     // data set files
inline constexpr int64_t kMaxResultsInputBytes = int64_t{1} << 40;  // HDF5 result files

// Throws invalid_input starting "<what> '<path>': " when the file is missing, not a
// regular file, or larger than `max_bytes`; returns its size.
int64_t check_input_file(const std::filesystem::path& path, const std::string& what,
                         int64_t max_bytes);

}  // namespace interplace
