// open_dataset's names and shape checks, the byte-level text corpus and synthetic data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <set>

#include "data_fixtures.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {
namespace {

using testing::ScratchDirectory;

std::string invalid_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(OpenDataset, NamesAndShapeChecks) {
  EXPECT_EQ(dataset_names(), (std::vector<std::string>{"fashion-mnist", "text", "synthetic"}));
  const std::string unknown = invalid_message([] {
    open_dataset("cifar10", "", {{3, 32, 32}, 10, false}, 1);
  });
  EXPECT_TRUE(contains(unknown, "'cifar10'") && contains(unknown, "fashion-mnist, text, synthetic"))
      << unknown;
  // Shape checks come before any file is read, so a bogus directory does not matter.
  const std::string cifar = invalid_message([] {
    open_dataset("fashion-mnist", "/nonexistent", {{3, 32, 32}, 10, false}, 1);
  });
  EXPECT_TRUE(contains(cifar, "fashion-mnist") && contains(cifar, "[3, 32, 32]")) << cifar;
  invalid_message([] {
    open_dataset("fashion-mnist", "/nonexistent", {{1, 28, 28}, 100, false}, 1);
  });
  invalid_message([] {
    open_dataset("fashion-mnist", "/nonexistent", {{1, 28, 28}, 10, true}, 1);
  });
  const std::string text = invalid_message([] {
    open_dataset("text", "/nonexistent", {{64}, 256, false}, 1);
  });
  EXPECT_TRUE(contains(text, "text needs") && contains(text, "256 classes")) << text;
  invalid_message([] { open_dataset("text", "/nonexistent", {{64}, 50257, true}, 1); });
  invalid_message([] { open_dataset("text", "/nonexistent", {{8, 8}, 256, true}, 1); });
  invalid_message([] { open_dataset("synthetic", "", {{}, 10, false}, 1); });
  invalid_message([] { open_dataset("synthetic", "", {{3, 0, 4}, 10, false}, 1); });
  invalid_message([] { open_dataset("synthetic", "", {{3, 4}, 0, false}, 1); });
  invalid_message([] { open_dataset("synthetic", "", {{3, 4}, 10, true}, 1); });
  EXPECT_EQ(default_dataset_directory("text"), "/usr/share/games/fortunes");
}

// ---- text --------------------------------------------------------------------------------

// A corpus of 200 bytes with byte i = i, split over files so that the order shows: "b"
// holds bytes 120..199 and "a" bytes 0..119; a .dat file, a .u8 link and a subdirectory
// must be left out.
void write_counting_corpus(const std::filesystem::path& dir) {
  std::vector<uint8_t> bytes(200);
  std::iota(bytes.begin(), bytes.end(), uint8_t{0});
  testing::write_bytes(dir / "b", std::vector<uint8_t>(bytes.begin() + 120, bytes.end()));
  testing::write_bytes(dir / "a", std::vector<uint8_t>(bytes.begin(), bytes.begin() + 120));
  testing::write_bytes(dir / "a.dat", {250, 251, 252});
  std::filesystem::create_symlink("a", dir / "a.u8");
  std::filesystem::create_symlink("b", dir / "c");
  std::filesystem::create_directory(dir / "off");
}

TEST(TextCorpus, WindowsAndNextByteLabels) {
  ScratchDirectory dir("text_windows");
  write_counting_corpus(dir.path());
  const SampleShape shape{{4}, 256, true};
  auto data = open_dataset("text", dir.path().string(), shape, 3);
  // 180 training bytes, 20 test bytes; windows of T + 1 = 5 bytes, T apart.
  EXPECT_EQ(data->train_size(), (180 - 1) / 4);
  EXPECT_EQ(data->test_size(), (20 - 1) / 4);
  const Batch test = data->test_batch(0, data->test_size());
  ASSERT_EQ(test.inputs.shape(), (kernels::Shape{4, 4}));
  ASSERT_EQ(test.labels.shape(), (kernels::Shape{4, 4}));
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(test.inputs.at(i), static_cast<float>(180 + i));  // consecutive, no overlap
    EXPECT_EQ(test.labels.at(i), static_cast<float>(181 + i));
  }
  EXPECT_EQ(data->test_batch(2, 1).inputs.to_vector(), (std::vector<float>{188, 189, 190, 191}));
  auto same = open_dataset("text", dir.path().string(), shape, 3);
  auto other = open_dataset("text", dir.path().string(), shape, 4);
  bool seeds_differ = false;
  std::set<float> starts;
  for (int64_t step = 0; step < 30; ++step) {
    const Batch batch = data->train_batch(step, 8);
    ASSERT_EQ(batch.inputs.shape(), (kernels::Shape{8, 4}));
    EXPECT_EQ(batch.inputs.to_vector(), same->train_batch(step, 8).inputs.to_vector());
    seeds_differ =
        seeds_differ || batch.inputs.to_vector() != other->train_batch(step, 8).inputs.to_vector();
    for (int64_t b = 0; b < 8; ++b) {
      const float first = batch.inputs.at(b * 4);
      starts.insert(first);
      for (int64_t t = 0; t < 4; ++t) {
        EXPECT_EQ(batch.inputs.at(b * 4 + t), first + static_cast<float>(t));
        EXPECT_EQ(batch.labels.at(b * 4 + t), first + static_cast<float>(t + 1));
      }
      EXPECT_LE(first + 4, 179.0f) << "a training window reaches into the test bytes";
    }
  }
  EXPECT_TRUE(seeds_differ);
  EXPECT_GT(starts.size(), 60u) << "offsets are not spread over the training bytes";
  const std::string too_long = invalid_message([&] {
    open_dataset("text", dir.path().string(), {{20}, 256, true}, 1);
  });
  EXPECT_TRUE(contains(too_long, "sequence length 20")) << too_long;
}

TEST(TextCorpus, ReadsTheFortunes) {
  const std::string dir = "/usr/share/games/fortunes";
  if (!std::filesystem::exists(dir + "/fortunes")) GTEST_SKIP() << "package fortunes not installed";
  int64_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_symlink() && entry.is_regular_file() && ext != ".dat" && ext != ".u8") {
      bytes += static_cast<int64_t>(entry.file_size());
    }
  }
  ASSERT_GT(bytes, 1000000);
  auto data = open_dataset("text", "", {{64}, 256, true}, 1);
  const int64_t train_bytes = bytes * 9 / 10;
  EXPECT_EQ(data->train_size(), (train_bytes - 1) / 64);
  EXPECT_EQ(data->test_size(), (bytes - train_bytes - 1) / 64);
  const Batch batch = data->train_batch(0, 16);
  for (int64_t i = 0; i < batch.inputs.numel(); ++i) {
    ASSERT_TRUE(batch.inputs.at(i) >= 0 && batch.inputs.at(i) <= 255);
    if ((i + 1) % 64 != 0) {
      ASSERT_EQ(batch.labels.at(i), batch.inputs.at(i + 1));
    }
  }
}

TEST(TextCorpus, MissingOrEmptyDirectory) {
  ScratchDirectory dir("text_empty");
  for (const std::filesystem::path& where : {dir.path(), dir.path() / "nowhere"}) {
    try {
      open_dataset("text", where.string(), {{4}, 256, true}, 1);
      ADD_FAILURE() << where << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::runtime);
      EXPECT_TRUE(contains(e.what(), where.string())) << e.what();
    }
  }
}

// ---- synthetic ---------------------------------------------------------------------------

TEST(Synthetic, ImagesAreSeededNormals) {
  const SampleShape shape{{3, 8, 8}, 7, false};
  auto a = open_dataset("synthetic", "", shape, 5);
  auto b = open_dataset("synthetic", "", shape, 5);
  auto c = open_dataset("synthetic", "", shape, 6);
  EXPECT_GE(a->train_size(), 1 << 20);
  const Batch x = a->train_batch(3, 64);
  EXPECT_EQ(x.inputs.shape(), (kernels::Shape{64, 3, 8, 8}));
  EXPECT_EQ(x.labels.shape(), (kernels::Shape{64}));
  EXPECT_EQ(x.inputs.to_vector(), b->train_batch(3, 64).inputs.to_vector());
  EXPECT_EQ(x.labels.to_vector(), b->train_batch(3, 64).labels.to_vector());
  EXPECT_NE(x.inputs.to_vector(), c->train_batch(3, 64).inputs.to_vector());
  EXPECT_NE(x.inputs.to_vector(), a->train_batch(4, 64).inputs.to_vector());
  double sum = 0.0, squares = 0.0;
  for (float v : x.inputs.to_vector()) {
    sum += v;
    squares += v * v;
  }
  const double n = static_cast<double>(x.inputs.numel());
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(squares / n, 1.0, 0.08);
  std::set<float> labels;
  for (float label : x.labels.to_vector()) {
    EXPECT_TRUE(label >= 0 && label < 7 && label == std::floor(label)) << label;
    labels.insert(label);
  }
  EXPECT_EQ(labels.size(), 7u);
  // A test sample is the same whichever range asks for it.
  const std::vector<float> ten = a->test_batch(0, 10).inputs.to_vector();
  const std::vector<float> fifth = a->test_batch(5, 1).inputs.to_vector();
  EXPECT_TRUE(std::equal(fifth.begin(), fifth.end(), ten.begin() + 5 * 192));
}

TEST(Synthetic, TokensForSequenceModels) {
  auto data = open_dataset("synthetic", "", {{16}, 50, true}, 1);
  const Batch x = data->train_batch(0, 4);
  EXPECT_EQ(x.inputs.shape(), (kernels::Shape{4, 16}));
  EXPECT_EQ(x.labels.shape(), (kernels::Shape{4, 16}));
  for (const kernels::Tensor* t : {&x.inputs, &x.labels}) {
    for (float v : t->to_vector()) EXPECT_TRUE(v >= 0 && v < 50 && v == std::floor(v)) << v;
  }
  // A BERT-style classifier: token inputs from its own vocabulary, one label per sample.
  SampleShape classifier{{16}, 2, false};
  classifier.input_vocab = 1000;
  const Batch y = open_dataset("synthetic", "", classifier, 1)->train_batch(0, 32);
  EXPECT_EQ(y.labels.shape(), (kernels::Shape{32}));
  float largest = 0;
  for (float v : y.inputs.to_vector()) {
    EXPECT_TRUE(v >= 0 && v < 1000 && v == std::floor(v)) << v;
    largest = std::max(largest, v);
  }
  EXPECT_GT(largest, 2) << "token ids drawn from the classes, not the vocabulary";
}

}  // namespace
}  // namespace interplace::runs
