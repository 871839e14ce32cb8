// Training-batch augmentation (datasets.hpp): every augmented sample is a crop of the
// sample padded by 4, mirrored or not; the same seed gives the same batches; test batches
// are never augmented; non-image data is refused.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {
namespace {

constexpr int64_t kChannels = 2, kSide = 8, kPlane = kSide * kSide;
constexpr float kBackground = -7.0f;

// Distinct pixel values (1, 2, ...) so that a transformed sample identifies its transform.
class Ramp final : public Dataset {
 public:
  std::string name() const override { return "ramp"; }
  int64_t train_size() const override { return 1000; }
  int64_t test_size() const override { return 100; }
  Batch train_batch(int64_t step, int64_t batch_size) override { return make(step, batch_size); }
  Batch test_batch(int64_t first, int64_t count) override { return make(first, count); }
  float background() const override { return kBackground; }

 private:
  static Batch make(int64_t offset, int64_t count) {
    Batch b{kernels::Tensor({count, kChannels, kSide, kSide}), kernels::Tensor({count})};
    for (int64_t i = 0; i < b.inputs.numel(); ++i) {
      b.inputs.data()[i] = static_cast<float>(offset * 1000 + i + 1);
    }
    for (int64_t i = 0; i < count; ++i) b.labels.data()[i] = static_cast<float>((offset + i) % 10);
    return b;
  }
};

// The (dy, dx, flip) for which `out` is `in` padded with the background, cropped and
// mirrored; dy = -99 when none.
struct Transform {
  int64_t dy = -99, dx = 0;
  bool flip = false;
};
Transform identify(const float* in, const float* out) {
  for (int64_t dy = -4; dy <= 4; ++dy) {
    for (int64_t dx = -4; dx <= 4; ++dx) {
      for (const bool flip : {false, true}) {
        bool same = true;
        for (int64_t c = 0; c < kChannels && same; ++c) {
          for (int64_t y = 0; y < kSide && same; ++y) {
            for (int64_t x = 0; x < kSide && same; ++x) {
              const int64_t sy = y + dy, sx = (flip ? kSide - 1 - x : x) + dx;
              const bool inside = sy >= 0 && sy < kSide && sx >= 0 && sx < kSide;
              const float want = inside ? in[c * kPlane + sy * kSide + sx] : kBackground;
              same = out[c * kPlane + y * kSide + x] == want;
            }
          }
        }
        if (same) return {dy, dx, flip};
      }
    }
  }
  return {};
}

std::vector<float> values(const kernels::Tensor& t) {
  return t.to_vector();
}

TEST(Augmentation, CropsWithPaddingAndFlips) {
  auto augmented = with_augmentation(std::make_unique<Ramp>(), Augmentation::crop_flip, 5);
  Ramp plain;
  std::set<int64_t> shifts;
  int flips = 0, samples = 0;
  for (int64_t step = 0; step < 4; ++step) {
    const Batch a = augmented->train_batch(step, 16);
    const Batch p = plain.train_batch(step, 16);
    EXPECT_EQ(values(a.labels), values(p.labels));
    for (int64_t b = 0; b < 16; ++b) {
      const Transform t = identify(p.inputs.data() + b * kChannels * kPlane,
                                   a.inputs.data() + b * kChannels * kPlane);
      ASSERT_NE(t.dy, -99) << "sample " << b << " of step " << step << " is no crop or flip";
      shifts.insert(t.dy * 10 + t.dx);
      flips += t.flip ? 1 : 0;
      ++samples;
    }
  }
  // 64 draws of 81 offsets and a coin: many offsets, and both sides of the coin.
  EXPECT_GT(shifts.size(), 20u);
  EXPECT_GT(flips, 10);
  EXPECT_LT(flips, samples - 10);
}

TEST(Augmentation, SameSeedSameBatchesAndNeverInEvaluation) {
  auto a = with_augmentation(std::make_unique<Ramp>(), Augmentation::crop_flip, 5);
  auto b = with_augmentation(std::make_unique<Ramp>(), Augmentation::crop_flip, 5);
  auto c = with_augmentation(std::make_unique<Ramp>(), Augmentation::crop_flip, 6);
  Ramp plain;
  EXPECT_EQ(values(a->train_batch(3, 32).inputs), values(b->train_batch(3, 32).inputs));
  EXPECT_NE(values(a->train_batch(3, 32).inputs), values(c->train_batch(3, 32).inputs));
  EXPECT_NE(values(a->train_batch(3, 32).inputs), values(a->train_batch(4, 32).inputs));
  EXPECT_NE(values(a->train_batch(3, 32).inputs), values(plain.train_batch(3, 32).inputs));
  // Evaluation reads test batches: exactly the data set's.
  EXPECT_EQ(values(a->test_batch(10, 32).inputs), values(plain.test_batch(10, 32).inputs));
  EXPECT_EQ(a->train_size(), plain.train_size());
  EXPECT_EQ(a->test_size(), plain.test_size());
}

TEST(Augmentation, NoneIsTheDataSetItselfAndNamesParse) {
  auto data = std::make_unique<Ramp>();
  const Dataset* raw = data.get();
  EXPECT_EQ(with_augmentation(std::move(data), Augmentation::none, 5).get(), raw);
  EXPECT_EQ(augmentation_by_name("crop-flip"), Augmentation::crop_flip);
  EXPECT_EQ(to_string(Augmentation::none), "none");
  EXPECT_THROW(augmentation_by_name("mixup"), Error);
}

TEST(Augmentation, RefusesNonImageSamples) {
  EXPECT_NO_THROW(check_augmentation(Augmentation::crop_flip, {{1, 28, 28}, 10, false}));
  EXPECT_NO_THROW(check_augmentation(Augmentation::none, {{64}, 256, true}));
  EXPECT_THROW(check_augmentation(Augmentation::crop_flip, {{64}, 256, true}), Error);
  EXPECT_THROW(check_augmentation(Augmentation::crop_flip, {{784}, 10, false}), Error);
}

TEST(Augmentation, FashionMnistPadsWithABlackPixel) {
  EXPECT_EQ(dataset_train_size("fashion-mnist"), 60000);
  EXPECT_EQ(dataset_train_size("text"), 0);
  EXPECT_THROW(dataset_train_size("cifar10"), Error);
}

}  // namespace
}  // namespace interplace::runs
