// Whole-file gzip decompression with zlib, strict: the data files are small enough to
// hold in memory, and every way a file can be damaged must become a clear error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace interplace::runs::data {

// The decompressed bytes of a gzip file (concatenated members are joined, as gzip -d
// does). Throws runtime naming the file for: a file that cannot be read, one that is not
// gzip (no 1f 8b magic), a corrupt stream or a failed CRC/length check, a stream that ends
// early (truncated), and bytes after the last member that are not another member.
std::vector<uint8_t> read_gzip_file(const std::filesystem::path& path);

// The raw bytes of a file; throws runtime naming the file when it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

}  // namespace interplace::runs::data
