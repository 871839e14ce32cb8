// Helpers for the data-set tests: a scratch directory and writers of (possibly broken)
// gzip'd IDX files, so that every validation error can be provoked on purpose.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace interplace::runs::testing {

// A fresh directory under the system's temporary directory, removed afterwards.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& tag) {
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("interplace_" + tag + "_" + std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::vector<uint8_t> gzip(const std::vector<uint8_t>& bytes) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(bytes.size())));
  z.next_in = const_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

inline void put_u32(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(value >> shift));
}

// IDX images: magic 2051, count, rows, columns; image i has every pixel equal to
// pixel_of(i), so a test can tell which sample a batch holds.
inline std::vector<uint8_t> idx_images(uint32_t count, uint32_t rows = 28, uint32_t columns = 28,
                                       uint32_t magic = 2051) {
  std::vector<uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, rows);
  put_u32(out, columns);
  for (uint32_t i = 0; i < count; ++i) {
    out.insert(out.end(), static_cast<size_t>(rows) * columns, static_cast<uint8_t>(i * 20));
  }
  return out;
}

inline std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels, uint32_t magic = 2049) {
  std::vector<uint8_t> out;
  put_u32(out, magic);
  put_u32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// Writes a valid small Fashion-MNIST directory: `train` and `test` images, label i % 10.
inline void write_small_fashion_mnist(const std::filesystem::path& dir, uint32_t train,
                                      uint32_t test) {
  for (const auto& [prefix, count] : {std::pair{"train", train}, std::pair{"t10k", test}}) {
    std::vector<uint8_t> labels;
    for (uint32_t i = 0; i < count; ++i) labels.push_back(static_cast<uint8_t>(i % 10));
    write_bytes(dir / (std::string(prefix) + "-images-idx3-ubyte.gz"), gzip(idx_images(count)));
    write_bytes(dir / (std::string(prefix) + "-labels-idx1-ubyte.gz"), gzip(idx_labels(labels)));
  }
}

}  // namespace interplace::runs::testing
