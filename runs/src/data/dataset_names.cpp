// open_dataset: the names, the default locations, and the sample shape each data set can
// feed.
#include "dataset_support.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/runs/datasets.hpp"
#include "interplace/runs/name_choices.hpp"

namespace interplace::runs {
namespace {

std::string names_list() {
  return join_names(dataset_names());
}

std::string describe(const SampleShape& shape) {
  return "input " + kernels::to_string(shape.input) + ", " + std::to_string(shape.classes) +
         " classes" + (shape.sequence ? ", per-position labels" : "");
}

[[noreturn]] void mismatch(const std::string& name, const std::string& needs,
                           const SampleShape& shape) {
  throw_invalid("data set " + name + " needs a model with " + needs + "; the model has " +
                describe(shape));
}

void check_synthetic_shape(const SampleShape& shape) {
  bool valid = !shape.input.empty() && shape.classes >= 1 && shape.input_vocab >= 0;
  for (int64_t extent : shape.input) valid = valid && extent >= 1;
  if (shape.sequence) valid = valid && shape.input.size() == 1;
  if (!valid) {
    mismatch("synthetic",
             "a non-empty input shape of positive extents, >= 1 classes, and input [T] when "
             "labels are per position",
             shape);
  }
}

}  // namespace

std::vector<std::string> dataset_names() {
  return {"fashion-mnist", "text", "synthetic"};
}

DatasetKind dataset_by_name(std::string_view name) {
  const std::vector<std::string> names = dataset_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<DatasetKind>(i);
  }
  throw_invalid("unknown dataset '" + std::string(name) + "' (valid: " + names_list() + ")");
}

std::string to_string(DatasetKind kind) {
  return dataset_names().at(static_cast<size_t>(kind));
}

int64_t dataset_train_size(const std::string& name) {
  if (name == "fashion-mnist") return 60000;
  if (name == "synthetic") return data::kSyntheticTrainSize;
  if (name == "text") return 0;
  throw_invalid("unknown data set '" + name + "' (valid: " + names_list() + ")");
}

std::string default_dataset_directory(const std::string& name) {
  if (name == "fashion-mnist") return "/usr/share/datasets/fashion-mnist";
  if (name == "text") return "/usr/share/games/fortunes";
  if (name == "synthetic") return "";
  throw_invalid("unknown data set '" + name + "' (valid: " + names_list() + ")");
}

int64_t epoch_of_step(int64_t step, int64_t batch_size, int64_t train_size) {
  data::check_train_request("epoch_of_step", step, batch_size, train_size);
  return data::EpochShuffle::epoch_of(step, batch_size, train_size);
}

void check_dataset_fits(const std::string& name, const SampleShape& shape) {
  if (name == "fashion-mnist") {
    if (shape.input != kernels::Shape{1, 28, 28} || shape.classes != 10 || shape.sequence) {
      mismatch(name, "input [1, 28, 28] and 10 classes, one label per sample", shape);
    }
  } else if (name == "text") {
    if (!shape.sequence || shape.input.size() != 1 || shape.input[0] < 1 || shape.classes != 256) {
      mismatch(name, "input [T] of bytes and 256 classes, one label per position", shape);
    }
  } else if (name == "synthetic") {
    check_synthetic_shape(shape);
  } else {
    throw_invalid("unknown data set '" + name + "' (valid: " + names_list() + ")");
  }
}

std::unique_ptr<Dataset> open_dataset(const std::string& name, const std::string& directory,
                                      const SampleShape& shape, uint64_t seed) {
  check_dataset_fits(name, shape);
  const std::string where = directory.empty() ? default_dataset_directory(name) : directory;
  if (name == "fashion-mnist") return data::open_fashion_mnist(where, seed);
  if (name == "text") return data::open_text_corpus(where, shape.input[0], seed);
  return data::open_synthetic(shape, seed);
}

}  // namespace interplace::runs
