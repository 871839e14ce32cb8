// The IDX format of (Fashion-)MNIST: a big-endian header (magic 0x0000080N: unsigned
// bytes, N dimensions; then N 32-bit extents) followed by exactly the product of the
// extents in bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace interplace::runs::data {

struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t columns = 0;
  std::vector<uint8_t> pixels;  // count x rows x columns, row-major
};

// Read from a gzip'd IDX file. Throws runtime naming the file for gzip errors, a wrong
// magic number (2051 for images, 2049 for labels), images that are not rows x columns,
// a payload shorter (truncated) or longer (trailing data) than the header says, and labels
// outside 0..classes-1.
IdxImages read_idx_images(const std::filesystem::path& path, int64_t rows, int64_t columns);
std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path, int64_t classes);

}  // namespace interplace::runs::data
