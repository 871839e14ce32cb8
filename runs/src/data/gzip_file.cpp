#include "gzip_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>

#include "interplace/kernels/error.hpp"
#include "interplace/kernels/input_file.hpp"

namespace interplace::runs::data {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw_runtime(path.string() + ": " + what);
}

// Inflates one gzip member starting at in[offset]; returns the offset just past it.
// `check` sees the output after every chunk (at most kChunk bytes at a time).
constexpr size_t kChunk = size_t{1} << 20;
size_t inflate_member(const std::filesystem::path& path, const std::vector<uint8_t>& in,
                      size_t offset, std::vector<uint8_t>& out,
                      const std::function<void(const std::vector<uint8_t>&)>& check) {
  z_stream z{};
  // 16 + MAX_WBITS: gzip wrapper only, so zlib or raw deflate data is not accepted
  // silently, and the trailer's CRC-32 and length are checked.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) fail(path, "zlib inflateInit2 failed");
  z.next_in = const_cast<Bytef*>(in.data() + offset);
  z.avail_in = static_cast<uInt>(in.size() - offset);
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (out.size() == out.capacity()) out.reserve(out.capacity() * 2 + kChunk);
    const size_t used = out.size();
    const size_t room = std::min<size_t>(out.capacity() - used, kChunk);
    out.resize(used + room);
    z.next_out = out.data() + used;
    z.avail_out = static_cast<uInt>(room);
    status = inflate(&z, Z_NO_FLUSH);
    out.resize(used + room - z.avail_out);
    try {
      check(out);
    } catch (...) {
      inflateEnd(&z);
      throw;
    }
    if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_MEM_ERROR ||
        status == Z_STREAM_ERROR) {
      const std::string message = z.msg != nullptr ? z.msg : "error " + std::to_string(status);
      inflateEnd(&z);
      fail(path, "corrupt gzip stream (" + message + ")");
    }
    // No progress with all input consumed: the stream stops before its end.
    if (status == Z_BUF_ERROR || (status == Z_OK && z.avail_in == 0 && z.avail_out > 0)) {
      inflateEnd(&z);
      fail(path, "truncated gzip stream (the file ends before the compressed data does)");
    }
  }
  const size_t end = in.size() - z.avail_in;
  inflateEnd(&z);
  return end;
}

bool gzip_magic_at(const std::vector<uint8_t>& in, size_t offset) {
  return in.size() >= offset + 2 && in[offset] == 0x1f && in[offset + 1] == 0x8b;
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  // Kind and size before reading (a directory, /dev/zero); a missing file keeps the
  // "cannot open" error below.
  std::error_code error;
  if (std::filesystem::exists(path, error)) {
    check_input_file(path, "data file", kMaxDataInputBytes);
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<uint8_t> bytes;
  file.seekg(0, std::ios::end);
  const std::streamoff size = file.tellg();
  if (size < 0) fail(path, "cannot read (not a regular file?)");
  file.seekg(0, std::ios::beg);
  bytes.resize(static_cast<size_t>(size));
  if (size > 0 && !file.read(reinterpret_cast<char*>(bytes.data()), size)) {
    fail(path, "read error");
  }
  return bytes;
}

std::vector<uint8_t> read_gzip_file(const std::filesystem::path& path,
                                    const GzipExpectation& expect, size_t max_bytes) {
  const std::vector<uint8_t> in = read_file_bytes(path);
  if (!gzip_magic_at(in, 0)) fail(path, "not a gzip file (no 1f 8b magic bytes)");
  std::vector<uint8_t> out;
  // The trailer's ISIZE (length mod 2^32) is a good first guess for the output size; a
  // file can claim anything there, so the guess is bounded too.
  if (in.size() >= 18) {
    const size_t n = in.size();
    const uint32_t isize =
        static_cast<uint32_t>(in[n - 4]) | static_cast<uint32_t>(in[n - 3]) << 8 |
        static_cast<uint32_t>(in[n - 2]) << 16 | static_cast<uint32_t>(in[n - 1]) << 24;
    out.reserve(std::min<size_t>({isize, max_bytes, size_t{64} << 20}));
  }
  size_t limit = max_bytes;
  bool header_checked = expect.header_bytes == 0 || !expect.total_size;
  const auto check = [&](const std::vector<uint8_t>& produced) {
    if (!header_checked && produced.size() >= expect.header_bytes) {
      header_checked = true;  // first, so a wrong magic number is named as such
      // A chunk of slack: a little trailing data is left to the caller's exact message.
      limit = std::min(limit, expect.total_size(produced) + kChunk);
    }
    if (produced.size() > limit) {
      fail(path, "decompresses to more than " + std::to_string(limit) + " bytes, " +
                     (limit < max_bytes ? std::string("1 MiB more than its header declares")
                                        : std::string("the most a data file may hold")) +
                     " (trailing data, or a gzip bomb); stopped there");
    }
  };
  size_t offset = 0;
  while (offset < in.size()) {
    if (offset > 0 && !gzip_magic_at(in, offset)) {
      fail(path, "trailing garbage: " + std::to_string(in.size() - offset) +
                     " bytes after the gzip stream");
    }
    offset = inflate_member(path, in, offset, out, check);
  }
  // Shorter than the header: let the caller's header check say what is missing.
  if (!header_checked) expect.total_size(out);
  return out;
}

}  // namespace interplace::runs::data
