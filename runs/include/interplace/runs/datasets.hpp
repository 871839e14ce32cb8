// Data sets the runtime trains on (docs/cli.md, "Data sets"). Every rank opens the same data set
// with the same seed and so draws the same mini-batches: the first stage reads the inputs,
// every stage with a loss (the last, and those with auxiliary heads) reads the labels.
//
// Integer data (token ids, class labels) travel as float tensors holding whole numbers,
// like everywhere in the kernel library.
//   fashion-mnist  inputs [B, 1, 28, 28] (pixels / 255, then normalised by the training
//                  split's mean and standard deviation), labels [B] in 0..9
//   text           a byte-level corpus: inputs [B, T] bytes 0..255, labels [B, T] the
//                  next byte of each position
//   synthetic      seeded random inputs of the model's input shape and random labels,
//                  for throughput runs (nothing to read)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/kernels/tensor.hpp"

namespace interplace::runs {

struct Batch {
  kernels::Tensor inputs;
  kernels::Tensor labels;
};

// What a data set must produce: taken from the model's input node and its logits.
struct SampleShape {
  std::vector<int64_t> input;  // one sample, without the batch dimension: {1,28,28} or {T}
  int64_t classes = 0;         // logits' last dimension (the vocabulary for language models)
  bool sequence = false;       // labels per position ([B, T]) rather than per sample ([B])
  // Token inputs (ids in [0, input_vocab)) for synthetic data; 0: token ids in
  // [0, classes) for sequence models, real values otherwise. (BERT classifiers set it.)
  int64_t input_vocab = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string name() const = 0;
  virtual int64_t train_size() const = 0;  // samples (sequences of T+1 bytes for text)
  virtual int64_t test_size() const = 0;
  // Mini-batch `step` of a seeded shuffle of the training split, reshuffled every epoch.
  virtual Batch train_batch(int64_t step, int64_t batch_size) = 0;
  // Test samples [first, first + count), in file order.
  virtual Batch test_batch(int64_t first, int64_t count) = 0;
  // Samples held out of the training split for validation (with_validation_split; 0:
  // none), and [first, first + count) of them, unaugmented. The default has none and
  // throws invalid_input.
  virtual int64_t validation_size() const { return 0; }
  virtual Batch validation_batch(int64_t first, int64_t count);
  // The normalised value of a black (0) pixel: what augmentation pads with.
  virtual float background() const { return 0.0f; }
  // Training samples by index (0 .. train_size-1), unshuffled and unaugmented: what a
  // training subset (with_train_subset) draws its batches from. Data sets whose samples
  // have no index (the text corpus's windows start at random offsets) throw invalid_input.
  virtual Batch train_samples(const std::vector<int64_t>& indices);
};

// Throws invalid_input for an unknown name (listing the valid ones) or a model whose
// sample shape the data set cannot feed (Fashion-MNIST needs {1,28,28} and 10 classes,
// text needs a sequence model with 256 classes); runtime for a missing, truncated or
// corrupt file (naming the file and what was wrong). An empty `directory` means the
// data set's Debian location.
std::unique_ptr<Dataset> open_dataset(const std::string& name, const std::string& directory,
                                      const SampleShape& shape, uint64_t seed);

// The data sets, in the order of dataset_names().
enum class DatasetKind { fashion_mnist, text, synthetic };
std::vector<std::string> dataset_names();            // "fashion-mnist", "text", "synthetic"
DatasetKind dataset_by_name(std::string_view name);  // invalid_input listing the names
std::string to_string(DatasetKind kind);

// The training split's size without reading it: 60000 for fashion-mnist, the nominal size
// for synthetic, 0 for text (its windows depend on the corpus read). open_dataset's data
// set is checked against it where a run depends on it (epochs).
int64_t dataset_train_size(const std::string& name);

// Augmentation of training batches of image data ([C, H, W] samples):
//   none       the batch as read
//   crop-flip  each sample padded by 4 pixels of the value a black pixel normalises to,
//              cropped back to H x W at a random offset, and mirrored left-right with
//              probability 1/2 (torchvision's RandomCrop(padding=4) and
//              RandomHorizontalFlip before ToTensor/Normalize). Drawn per (seed, step,
//              position in the batch): the same seed gives the same batches.
enum class Augmentation { none, crop_flip };
Augmentation augmentation_by_name(const std::string& name);  // invalid_input listing names
std::string to_string(Augmentation augmentation);
const std::vector<std::string>& augmentation_names();  // "none", "crop-flip"
// Throws invalid_input when the samples are not images ([C, H, W]).
void check_augmentation(Augmentation augmentation, const SampleShape& shape);
// The data set with its training batches augmented (test batches as they are, so that
// evaluation never sees augmented data); `data` itself when augmentation is none.
std::unique_ptr<Dataset> with_augmentation(std::unique_ptr<Dataset> data, Augmentation augmentation,
                                           uint64_t seed);

// A fixed training subset, for runs that cannot afford whole epochs: the first
// `train_samples` samples of the training split in file order, shuffled anew each epoch
// like the whole split (EpochShuffle, drop-last), so train_size() is `train_samples` and an
// epoch is floor(train_samples / B) steps. Test batches and the normalisation (computed
// over the whole training split) are the data set's own. `data` itself when
// train_samples is 0. check_train_subset refuses (invalid_input) a negative count, a data
// set without indexed samples (only fashion-mnist has them) and more samples than the
// split holds.
void check_train_subset(const std::string& dataset, int64_t train_samples);
std::unique_ptr<Dataset> with_train_subset(std::unique_ptr<Dataset> data, int64_t train_samples,
                                           uint64_t seed);

// A validation split held out of the training split, as the interlocking study's
// reference code holds out 10% (random_split with a fixed generator): floor(N x fraction)
// of the N training samples, chosen by a permutation drawn from a fixed seed (the same
// split for every run, seed and strategy), are the validation split; the other samples
// are the training split, shuffled each epoch like the whole split (EpochShuffle), so
// train_size() is N minus the held-out count. Validation batches are never augmented.
// Apply it before with_train_subset (a subset is then the first samples of what is left)
// and before with_augmentation. `data` itself when the fraction is 0.
// check_validation_split refuses (invalid_input) a fraction outside [0, 0.5], a data set
// without indexed samples (only fashion-mnist has them), and a split that holds no sample.
void check_validation_split(const std::string& dataset, double fraction);
int64_t validation_held_out(int64_t train_size, double fraction);  // floor(N x fraction)
std::unique_ptr<Dataset> with_validation_split(std::unique_ptr<Dataset> data, double fraction,
                                               uint64_t seed);

// The shape checks of open_dataset alone, without reading anything: plans call it so that
// a model the data set cannot feed is refused before any rank trains.
void check_dataset_fits(const std::string& name,
                        const SampleShape& shape);  // fashion-mnist, text, synthetic

// Where open_dataset looks when `directory` is empty: /usr/share/datasets/fashion-mnist
// (package dataset-fashion-mnist), /usr/share/games/fortunes (package fortunes); empty
// for synthetic. Throws invalid_input for an unknown name.
std::string default_dataset_directory(const std::string& name);

// Training batches and epochs (every data set): with k = floor(train_size / B) batches
// per epoch, step s is batch s mod k of epoch s div k, a seeded permutation drawn anew
// each epoch; the train_size mod B samples left over at the end of an epoch's permutation
// are skipped (drop-last), so no batch straddles two epochs. The text corpus draws its
// windows at seeded random offsets per step instead (train_size is then nominal: the
// number of non-overlapping windows). Batch sizes must be in 1..train_size.
int64_t epoch_of_step(int64_t step, int64_t batch_size, int64_t train_size);

}  // namespace interplace::runs
