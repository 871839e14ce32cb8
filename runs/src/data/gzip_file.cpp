#include "gzip_file.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "interplace/kernels/error.hpp"

namespace interplace::runs::data {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw_runtime(path.string() + ": " + what);
}

// Inflates one gzip member starting at in[offset]; returns the offset just past it.
size_t inflate_member(const std::filesystem::path& path, const std::vector<uint8_t>& in,
                      size_t offset, std::vector<uint8_t>& out) {
  z_stream z{};
  // 16 + MAX_WBITS: gzip wrapper only, so zlib or raw deflate data is not accepted
  // silently, and the trailer's CRC-32 and length are checked.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) fail(path, "zlib inflateInit2 failed");
  z.next_in = const_cast<Bytef*>(in.data() + offset);
  z.avail_in = static_cast<uInt>(in.size() - offset);
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (out.size() == out.capacity()) out.reserve(out.capacity() * 2 + (1u << 20));
    const size_t used = out.size();
    const size_t room = std::min<size_t>(out.capacity() - used, std::numeric_limits<uInt>::max());
    out.resize(used + room);
    z.next_out = out.data() + used;
    z.avail_out = static_cast<uInt>(room);
    status = inflate(&z, Z_NO_FLUSH);
    out.resize(used + room - z.avail_out);
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

std::vector<uint8_t> read_gzip_file(const std::filesystem::path& path) {
  const std::vector<uint8_t> in = read_file_bytes(path);
  if (!gzip_magic_at(in, 0)) fail(path, "not a gzip file (no 1f 8b magic bytes)");
  std::vector<uint8_t> out;
  // The trailer's ISIZE (length mod 2^32) is a good first guess for the output size.
  if (in.size() >= 18) {
    const size_t n = in.size();
    const uint32_t isize =
        static_cast<uint32_t>(in[n - 4]) | static_cast<uint32_t>(in[n - 3]) << 8 |
        static_cast<uint32_t>(in[n - 2]) << 16 | static_cast<uint32_t>(in[n - 1]) << 24;
    out.reserve(std::min<size_t>(isize, size_t{1} << 30));
  }
  size_t offset = 0;
  while (offset < in.size()) {
    if (offset > 0 && !gzip_magic_at(in, offset)) {
      fail(path, "trailing garbage: " + std::to_string(in.size() - offset) +
                     " bytes after the gzip stream");
    }
    offset = inflate_member(path, in, offset, out);
  }
  return out;
}

}  // namespace interplace::runs::data
