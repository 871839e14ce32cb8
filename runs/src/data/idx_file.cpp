#include "idx_file.hpp"

#include <string>

#include "gzip_file.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::runs::data {
namespace {

constexpr uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw_runtime(path.string() + ": " + what);
}

uint32_t big_endian_u32(const std::vector<uint8_t>& bytes, size_t offset) {
  return static_cast<uint32_t>(bytes[offset]) << 24 |
         static_cast<uint32_t>(bytes[offset + 1]) << 16 |
         static_cast<uint32_t>(bytes[offset + 2]) << 8 | static_cast<uint32_t>(bytes[offset + 3]);
}

// Checks the magic number and the payload length; returns the extents.
std::vector<int64_t> read_header(const std::filesystem::path& path,
                                 const std::vector<uint8_t>& bytes, uint32_t magic,
                                 const char* kind, bool complete = true) {
  const size_t dims = magic & 0xffu;
  const size_t header_bytes = 4 + 4 * dims;
  if (bytes.size() < 4) {
    fail(path, "truncated IDX header (" + std::to_string(bytes.size()) + " bytes)");
  }
  const uint32_t found = big_endian_u32(bytes, 0);
  if (found != magic) {
    fail(path, "wrong IDX magic number " + std::to_string(found) + " (expected " +
                   std::to_string(magic) + " for an IDX " + kind + " file)");
  }
  if (bytes.size() < header_bytes) {
    fail(path, "truncated IDX header (" + std::to_string(bytes.size()) + " of " +
                   std::to_string(header_bytes) + " bytes)");
  }
  std::vector<int64_t> extents;
  int64_t payload = 1;
  for (size_t d = 0; d < dims; ++d) {
    extents.push_back(big_endian_u32(bytes, 4 + 4 * d));
    payload *= extents.back();  // at most 3 extents < 2^32 each: fits for real files
    if (payload > (int64_t{1} << 40)) fail(path, "IDX extents too large");
  }
  const auto expected = static_cast<int64_t>(header_bytes) + payload;
  if (!complete) return {expected};
  const auto actual = static_cast<int64_t>(bytes.size());
  if (actual < expected) {
    fail(path, "truncated: the header promises " + std::to_string(extents[0]) + " " + kind + " (" +
                   std::to_string(expected) + " bytes), the file holds " + std::to_string(actual) +
                   " bytes");
  }
  if (actual > expected) {
    fail(path, "trailing data: " + std::to_string(actual - expected) + " bytes after the " +
                   std::to_string(extents[0]) + " " + kind + " the header declares");
  }
  return extents;
}

// Checked while decompressing (gzip_file.hpp): the magic number as soon as the header is
// out, and no more output than the header declares, so a gzip bomb named like a data
// file stops after a few bytes rather than after gigabytes.
GzipExpectation idx_expectation(const std::filesystem::path& path, uint32_t magic,
                                const char* kind) {
  return {4 + 4 * (magic & 0xffu), [=](const std::vector<uint8_t>& header) {
            return static_cast<size_t>(read_header(path, header, magic, kind, false).front());
          }};
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path, int64_t rows, int64_t columns) {
  std::vector<uint8_t> bytes = read_gzip_file(path, idx_expectation(path, kImagesMagic, "images"));
  const std::vector<int64_t> extents = read_header(path, bytes, kImagesMagic, "images");
  if (extents[1] != rows || extents[2] != columns) {
    fail(path, "images are " + std::to_string(extents[1]) + "x" + std::to_string(extents[2]) +
                   ", expected " + std::to_string(rows) + "x" + std::to_string(columns));
  }
  IdxImages images;
  images.count = extents[0];
  images.rows = rows;
  images.columns = columns;
  bytes.erase(bytes.begin(), bytes.begin() + 16);  // keep only the pixels
  images.pixels = std::move(bytes);
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path, int64_t classes) {
  std::vector<uint8_t> bytes = read_gzip_file(path, idx_expectation(path, kLabelsMagic, "labels"));
  read_header(path, bytes, kLabelsMagic, "labels");
  bytes.erase(bytes.begin(), bytes.begin() + 8);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] >= classes) {
      fail(path, "label " + std::to_string(bytes[i]) + " at index " + std::to_string(i) +
                     " is outside 0.." + std::to_string(classes - 1));
    }
  }
  return bytes;
}

}  // namespace interplace::runs::data
