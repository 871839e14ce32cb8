// Augmentation of training batches (datasets.hpp): random crop with padding and
// horizontal flip, drawn from (seed, step, position) so that a run is reproducible and
// every rank, which draws the same batch, augments it the same way.
#include <algorithm>
#include <vector>

#include "dataset_support.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/kernels/random.hpp"

namespace interplace::runs {
namespace {

constexpr int64_t kPadding = 4;          // torchvision RandomCrop(32, padding=4), as the study
constexpr uint64_t kAugmentStream = 11;  // mix_seed stream: apart from shuffles and samples

}  // namespace

Augmentation augmentation_by_name(const std::string& name) {
  if (name == "none") return Augmentation::none;
  if (name == "crop-flip") return Augmentation::crop_flip;
  throw_invalid("unknown augmentation '" + name + "' (none, crop-flip)");
}

const std::vector<std::string>& augmentation_names() {
  static const std::vector<std::string> names = {"none", "crop-flip"};
  return names;
}

std::string to_string(Augmentation augmentation) {
  return augmentation == Augmentation::crop_flip ? "crop-flip" : "none";
}

void check_augmentation(Augmentation augmentation, const SampleShape& shape) {
  if (augmentation == Augmentation::none) return;
  if (shape.sequence || shape.input.size() != 3) {
    throw_invalid("augmentation " + to_string(augmentation) +
                  " needs image samples [C, H, W]; the model's samples are " +
                  kernels::to_string(shape.input) + ". HINT: augmentation = \"none\"");
  }
}

namespace {

// Crop with padding and flip, in place, on a [B, C, H, W] batch.
void crop_flip(Batch& batch, uint64_t seed, int64_t step, float background) {
  const kernels::Shape& shape = batch.inputs.shape();
  if (shape.size() != 4) {
    throw_invalid("augmentation needs [B, C, H, W] inputs, got " + kernels::to_string(shape));
  }
  const int64_t count = shape[0], channels = shape[1], height = shape[2], width = shape[3];
  const int64_t plane = height * width;
  std::vector<float> original(static_cast<size_t>(channels * plane));
  float* data = batch.inputs.data();
  for (int64_t b = 0; b < count; ++b) {
    kernels::Rng rng(data::mix_seed(seed, kAugmentStream, static_cast<uint64_t>(step * count + b)));
    // Offsets of the crop in the padded image, 0 .. 2 * padding each; then the flip.
    const auto dy = static_cast<int64_t>(rng.next_u64() % (2 * kPadding + 1)) - kPadding;
    const auto dx = static_cast<int64_t>(rng.next_u64() % (2 * kPadding + 1)) - kPadding;
    const bool flip = (rng.next_u64() & 1u) != 0;
    float* sample = data + b * channels * plane;
    std::copy(sample, sample + channels * plane, original.begin());
    for (int64_t c = 0; c < channels; ++c) {
      const float* from = original.data() + c * plane;
      float* to = sample + c * plane;
      for (int64_t y = 0; y < height; ++y) {
        const int64_t sy = y + dy;
        for (int64_t x = 0; x < width; ++x) {
          // The crop reads the padded image at (y + dy, x' + dx), x' the flipped column.
          const int64_t sx = (flip ? width - 1 - x : x) + dx;
          const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
          to[y * width + x] = inside ? from[sy * width + sx] : background;
        }
      }
    }
  }
}

class Augmented final : public Dataset {
 public:
  Augmented(std::unique_ptr<Dataset> data, uint64_t seed) : data_(std::move(data)), seed_(seed) {}
  std::string name() const override { return data_->name(); }
  int64_t train_size() const override { return data_->train_size(); }
  int64_t test_size() const override { return data_->test_size(); }
  Batch train_batch(int64_t step, int64_t batch_size) override {
    Batch batch = data_->train_batch(step, batch_size);
    crop_flip(batch, seed_, step, data_->background());
    return batch;
  }
  Batch test_batch(int64_t first, int64_t count) override {
    return data_->test_batch(first, count);
  }
  float background() const override { return data_->background(); }
  int64_t validation_size() const override { return data_->validation_size(); }
  Batch validation_batch(int64_t first, int64_t count) override {
    return data_->validation_batch(first, count);
  }

 private:
  std::unique_ptr<Dataset> data_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Dataset> with_augmentation(std::unique_ptr<Dataset> data, Augmentation augmentation,
                                           uint64_t seed) {
  if (augmentation == Augmentation::none) return data;
  return std::make_unique<Augmented>(std::move(data), seed);
}

}  // namespace interplace::runs
