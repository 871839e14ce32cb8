// Whole-file gzip decompression with zlib, strict: the data files are small enough to
// hold in memory, and every way a file can be damaged must become a clear error. Output
// is bounded while it is produced, so a gzip bomb (GBs of zeros in a few MB) fails early.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace interplace::runs::data {

// The decompressed bytes of a gzip file (concatenated members are joined, as gzip -d
// does). Throws runtime naming the file for: a file that cannot be read, one that is not
// gzip (no 1f 8b magic), a corrupt stream or a failed CRC/length check, a stream that ends
// early (truncated), and bytes after the last member that are not another member.
//
// What the decompressed data must look like, checked as it is produced: once
// `header_bytes` bytes are out, `total_size` checks them (throwing, e.g. for a wrong
// magic number) and returns the size they promise; decompression stops with an error
// as soon as the output exceeds that (or `max_bytes`), instead of inflating it all.
struct GzipExpectation {
  size_t header_bytes = 0;
  std::function<size_t(const std::vector<uint8_t>& header)> total_size;
};
inline constexpr size_t kMaxGzipOutputBytes = size_t{1} << 30;
std::vector<uint8_t> read_gzip_file(const std::filesystem::path& path,
                                    const GzipExpectation& expect = {},
                                    size_t max_bytes = kMaxGzipOutputBytes);

// The raw bytes of a file; throws runtime naming the file when it cannot be read, and
// invalid input when it is not a regular file of at most kMaxDataInputBytes.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

}  // namespace interplace::runs::data
