// The byte-level text corpus: the plain-text fortune files of Debian's `fortunes` package
// (/usr/share/games/fortunes), concatenated in sorted file-name order. Only regular files
// count: the .dat index files and the .u8 links to the same texts are left out, so each
// text is read once. The first 90% of the bytes train, the last 10% test.
#include <algorithm>

#include "dataset_support.hpp"
#include "gzip_file.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/random.hpp"

namespace interplace::runs::data {
namespace {

std::vector<uint8_t> read_corpus(const std::filesystem::path& directory) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    throw_runtime(directory.string() +
                  ": not a directory (install the Debian package "
                  "fortunes or pass the corpus directory)");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string extension = entry.path().extension().string();
    if (entry.is_symlink() || !entry.is_regular_file()) continue;
    if (extension == ".dat" || extension == ".u8") continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<uint8_t> corpus;
  for (const auto& path : files) {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    corpus.insert(corpus.end(), bytes.begin(), bytes.end());
  }
  if (files.empty()) throw_runtime(directory.string() + ": no text files in the corpus directory");
  return corpus;
}

class TextCorpus final : public Dataset {
 public:
  TextCorpus(std::vector<uint8_t> corpus, int64_t sequence_length, uint64_t seed)
      : corpus_(std::move(corpus)), length_(sequence_length), seed_(seed) {
    const auto bytes = static_cast<int64_t>(corpus_.size());
    train_bytes_ = bytes / 10 * 9 + bytes % 10 * 9 / 10;  // floor(0.9 * bytes), exactly
    // T + 1 bytes make a sample: T inputs and, shifted by one, T labels.
    if (train_bytes_ < length_ + 1 || bytes - train_bytes_ < length_ + 1) {
      throw_invalid("text: sequence length " + std::to_string(length_) +
                    " is too long for the corpus's " + std::to_string(bytes - train_bytes_) +
                    " test bytes");
    }
  }

  std::string name() const override { return "text"; }
  // Non-overlapping windows: every byte after the first is a label once.
  int64_t train_size() const override { return (train_bytes_ - 1) / length_; }
  int64_t test_size() const override {
    return (static_cast<int64_t>(corpus_.size()) - train_bytes_ - 1) / length_;
  }

  // Offsets drawn uniformly from [0, train_bytes - T - 1], with replacement, from a seed
  // of (seed, step): any step can be made without the ones before it.
  Batch train_batch(int64_t step, int64_t batch_size) override {
    check_train_request(name(), step, batch_size, train_size());
    kernels::Rng rng(mix_seed(seed_, /*stream=*/2, static_cast<uint64_t>(step)));
    const auto offsets = static_cast<uint64_t>(train_bytes_ - length_);
    std::vector<int64_t> starts(static_cast<size_t>(batch_size));
    for (int64_t& start : starts) start = static_cast<int64_t>(rng.next_u64() % offsets);
    return windows(starts);
  }

  // Test sample i is the window starting at test byte i * T.
  Batch test_batch(int64_t first, int64_t count) override {
    check_test_request(name(), first, count, test_size());
    std::vector<int64_t> starts(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      starts[static_cast<size_t>(i)] = train_bytes_ + (first + i) * length_;
    }
    return windows(starts);
  }

 private:
  Batch windows(const std::vector<int64_t>& starts) const {
    const auto count = static_cast<int64_t>(starts.size());
    Batch batch{kernels::Tensor({count, length_}), kernels::Tensor({count, length_})};
    for (int64_t b = 0; b < count; ++b) {
      const uint8_t* bytes = corpus_.data() + starts[static_cast<size_t>(b)];
      float* inputs = batch.inputs.data() + b * length_;
      float* labels = batch.labels.data() + b * length_;
      for (int64_t t = 0; t < length_; ++t) {
        inputs[t] = bytes[t];
        labels[t] = bytes[t + 1];
      }
    }
    return batch;
  }

  std::vector<uint8_t> corpus_;
  int64_t length_;
  uint64_t seed_;
  int64_t train_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> open_text_corpus(const std::filesystem::path& directory,
                                          int64_t sequence_length, uint64_t seed) {
  return std::make_unique<TextCorpus>(read_corpus(directory), sequence_length, seed);
}

}  // namespace interplace::runs::data
