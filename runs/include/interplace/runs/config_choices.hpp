// The closed sets of a TrainConfig (order, placer, interlock mode, data set, device,
// pipeline) as typed values: each is parsed once, from a spec value or a flag, by its
// registry's parser, and named back by its registry's to_string (the id's and the result
// file's text). Code compares kinds, never names:
//   config.placer == placement::PlacerKind::rl
//   config.pipeline.end_to_end()
// A value is also made from its name (`config.order = "dfs-post"` parses it, throwing
// invalid_input listing the valid names for an unknown one), as placement::Strategy is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interplace/kernels/tensor.hpp"
#include "interplace/placement/orders.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/placement/placers.hpp"
#include "interplace/placement/schedule.hpp"
#include "interplace/runs/datasets.hpp"

namespace interplace::runs {

// A value of the closed set `Set`: Set::Kind, its default Set::fallback, Set::by_name
// (throws invalid_input for an unknown name), Set::name and Set::names (the registry's).
template <typename Set>
class Choice {
 public:
  using Kind = typename Set::Kind;

  // Implicit, as placement::Strategy's: a kind is a value of the set, and a name is parsed
  // into one here, once.
  Choice() = default;
  Choice(Kind kind) : kind_(kind) {}
  Choice(std::string_view name) : kind_(Set::by_name(name)) {}
  Choice(const char* name) : Choice(std::string_view(name)) {}
  Choice(const std::string& name) : Choice(std::string_view(name)) {}

  Kind kind() const { return kind_; }
  bool operator==(const Choice&) const = default;
  bool operator==(Kind kind) const { return kind_ == kind; }
  // The registry's names, in its order.
  static std::vector<std::string> names() { return Set::names(); }

  friend std::string to_string(const Choice& choice) { return Set::name(choice.kind_); }

 private:
  Kind kind_ = Set::fallback;
};

struct OrderSet {
  using Kind = placement::OrderKind;
  static constexpr Kind fallback = Kind::topo;
  static Kind by_name(std::string_view name) { return placement::order_by_name(name); }
  static std::string name(Kind kind) { return placement::to_string(kind); }
  static std::vector<std::string> names() { return placement::order_names(); }
};

struct PlacerSet {
  using Kind = placement::PlacerKind;
  static constexpr Kind fallback = Kind::contiguous;
  static Kind by_name(std::string_view name) { return placement::placer_kind_by_name(name); }
  static std::string name(Kind kind) { return placement::to_string(kind); }
  static std::vector<std::string> names() { return placement::placer_names(); }
};

struct InterlockSet {
  using Kind = placement::InterlockMode;
  static constexpr Kind fallback = Kind::single;
  static Kind by_name(std::string_view name) { return placement::interlock_mode_by_name(name); }
  static std::string name(Kind kind) { return placement::to_string(kind); }
  static std::vector<std::string> names() { return placement::interlock_mode_names(); }
};

struct DatasetSet {
  using Kind = DatasetKind;
  static constexpr Kind fallback = Kind::synthetic;
  static Kind by_name(std::string_view name) { return dataset_by_name(name); }
  static std::string name(Kind kind) { return to_string(kind); }
  static std::vector<std::string> names() { return dataset_names(); }
};

struct DeviceSet {
  using Kind = kernels::Device;
  static constexpr Kind fallback = Kind::cpu;
  static Kind by_name(std::string_view name);  // devices.hpp's device_by_name
  static std::string name(Kind kind) { return kernels::to_string(kind); }
  static std::vector<std::string> names();  // devices.hpp's device_names
};

// What executes a configuration's training steps (docs/runtime.md): interplace's own
// kernels on its ranks, or PyTorch running the stages of the imported module itself
// ("The PyTorch runtime"), both writing the same records.
enum class RuntimeKind { native, torch };
// "native" or "torch"; invalid_input listing them for anything else.
RuntimeKind runtime_by_name(std::string_view name);
std::string to_string(RuntimeKind kind);
std::vector<std::string> runtime_names();

struct RuntimeSet {
  using Kind = RuntimeKind;
  static constexpr Kind fallback = Kind::native;
  static Kind by_name(std::string_view name) { return runtime_by_name(name); }
  static std::string name(Kind kind) { return to_string(kind); }
  static std::vector<std::string> names() { return runtime_names(); }
};

using OrderChoice = Choice<OrderSet>;
using PlacerChoice = Choice<PlacerSet>;
using InterlockChoice = Choice<InterlockSet>;
using DatasetChoice = Choice<DatasetSet>;
using DeviceChoice = Choice<DeviceSet>;
using RuntimeChoice = Choice<RuntimeSet>;

// What `pipeline` names that is no pipeline: the whole mini-batch end to end in one pass
// (M = 1), the interlocking study's end-to-end baseline, scheduled as GPipe with one
// micro-batch but named apart in specs, ids and result files.
inline constexpr std::string_view kEndToEndName = "e2e";

// The configuration's pipeline: one of the registry's (placement::pipeline_registry()), or
// none (end_to_end(): "e2e").
class TrainPipeline {
 public:
  // Implicit, as Choice's: a pipeline, or a name parsed once ("e2e": none).
  TrainPipeline() = default;  // gpipe
  TrainPipeline(placement::PipelineKind kind) : kind_(kind) {}
  TrainPipeline(std::string_view name);
  TrainPipeline(const char* name) : TrainPipeline(std::string_view(name)) {}
  TrainPipeline(const std::string& name) : TrainPipeline(std::string_view(name)) {}
  static TrainPipeline none() {
    TrainPipeline p;
    p.kind_.reset();
    return p;
  }

  bool end_to_end() const { return !kind_.has_value(); }
  // The registry's pipeline; unset for e2e.
  const std::optional<placement::PipelineKind>& pipeline() const { return kind_; }
  // What the schedule runs: the pipeline, GPipe for e2e (one micro-batch: one forward and
  // one backward pass).
  placement::PipelineKind scheduled() const {
    return kind_.value_or(placement::PipelineKind::gpipe);
  }

  bool operator==(const TrainPipeline&) const = default;
  bool operator==(placement::PipelineKind kind) const { return kind_ == kind; }

 private:
  std::optional<placement::PipelineKind> kind_ = placement::PipelineKind::gpipe;
};

// "e2e" or the registry's name.
std::string to_string(const TrainPipeline& pipeline);
// The names `pipeline` takes: the registry's, then "e2e".
std::vector<std::string> train_pipeline_names();

}  // namespace interplace::runs
