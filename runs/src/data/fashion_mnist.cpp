// Fashion-MNIST from Debian's dataset-fashion-mnist package: four gzip'd IDX files, read
// and validated whole at open (about 55 MB of pixels), kept as bytes, and turned into
// normalised floats per batch through a 256-entry table.
#include <array>
#include <cmath>

#include "dataset_support.hpp"
#include "idx_file.hpp"
#include "interplace/kernels/error.hpp"

namespace interplace::runs::data {
namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kPixels = kSide * kSide;
constexpr int64_t kClasses = 10;

struct Split {
  IdxImages images;
  std::vector<uint8_t> labels;
};

Split read_split(const std::filesystem::path& directory, const std::string& prefix) {
  const std::filesystem::path images_path = directory / (prefix + "-images-idx3-ubyte.gz");
  const std::filesystem::path labels_path = directory / (prefix + "-labels-idx1-ubyte.gz");
  Split split{read_idx_images(images_path, kSide, kSide), read_idx_labels(labels_path, kClasses)};
  if (split.images.count != static_cast<int64_t>(split.labels.size())) {
    throw_runtime(images_path.string() + " holds " + std::to_string(split.images.count) +
                  " images but " + labels_path.string() + " holds " +
                  std::to_string(split.labels.size()) + " labels");
  }
  if (split.images.count == 0) throw_runtime(images_path.string() + " holds no images");
  return split;
}

class FashionMnist final : public Dataset {
 public:
  FashionMnist(Split train, Split test, uint64_t seed)
      : train_(std::move(train)), test_(std::move(test)), shuffle_(train_.images.count, seed) {
    // Mean and (population) standard deviation of pixel/255 over the training split,
    // from a histogram: exact, and one pass over the bytes.
    std::array<int64_t, 256> histogram{};
    for (uint8_t p : train_.images.pixels) ++histogram[p];
    double sum = 0.0, sum_squares = 0.0;
    for (int v = 0; v < 256; ++v) {
      const double x = v / 255.0;
      sum += x * static_cast<double>(histogram[static_cast<size_t>(v)]);
      sum_squares += x * x * static_cast<double>(histogram[static_cast<size_t>(v)]);
    }
    const auto n = static_cast<double>(train_.images.pixels.size());
    mean_ = sum / n;
    stddev_ = std::sqrt(std::max(sum_squares / n - mean_ * mean_, 0.0));
    if (stddev_ == 0.0) throw_runtime("fashion-mnist: every training pixel has the same value");
    for (int v = 0; v < 256; ++v) {
      table_[static_cast<size_t>(v)] = static_cast<float>((v / 255.0 - mean_) / stddev_);
    }
  }

  std::string name() const override { return "fashion-mnist"; }
  int64_t train_size() const override { return train_.images.count; }
  int64_t test_size() const override { return test_.images.count; }
  float background() const override { return table_[0]; }

  Batch train_batch(int64_t step, int64_t batch_size) override {
    return gather(train_, shuffle_.batch(name(), step, batch_size));
  }

  Batch train_samples(const std::vector<int64_t>& indices) override {
    for (const int64_t i : indices) {
      if (i < 0 || i >= train_size()) {
        throw_invalid(name() + ": training sample " + std::to_string(i) + " is not within the " +
                      std::to_string(train_size()) + " training samples");
      }
    }
    return gather(train_, indices);
  }

  Batch test_batch(int64_t first, int64_t count) override {
    check_test_request(name(), first, count, test_size());
    std::vector<int64_t> indices(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) indices[static_cast<size_t>(i)] = first + i;
    return gather(test_, indices);
  }

 private:
  Batch gather(const Split& split, const std::vector<int64_t>& indices) const {
    const auto count = static_cast<int64_t>(indices.size());
    Batch batch{kernels::Tensor({count, 1, kSide, kSide}), kernels::Tensor({count})};
    float* inputs = batch.inputs.data();
    float* labels = batch.labels.data();
    for (int64_t b = 0; b < count; ++b) {
      const int64_t sample = indices[static_cast<size_t>(b)];
      const uint8_t* pixels = split.images.pixels.data() + sample * kPixels;
      float* out = inputs + b * kPixels;
      for (int64_t i = 0; i < kPixels; ++i) out[i] = table_[pixels[i]];
      labels[b] = static_cast<float>(split.labels[static_cast<size_t>(sample)]);
    }
    return batch;
  }

  Split train_;
  Split test_;
  EpochShuffle shuffle_;
  double mean_ = 0.0;
  double stddev_ = 1.0;
  std::array<float, 256> table_{};
};

}  // namespace

std::unique_ptr<Dataset> open_fashion_mnist(const std::filesystem::path& directory, uint64_t seed) {
  Split train = read_split(directory, "train");
  Split test = read_split(directory, "t10k");
  return std::make_unique<FashionMnist>(std::move(train), std::move(test), seed);
}

}  // namespace interplace::runs::data
