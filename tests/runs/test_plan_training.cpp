// plan_training: validation and what it decides (no MPI).
#include <gtest/gtest.h>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/training.hpp"

namespace interplace::runs {
namespace {

TrainConfig base() {
  TrainConfig c;
  c.model = "resnet20";
  c.batch_size = 8;
  c.devices = 2;
  return c;
}

void expect_invalid(const TrainConfig& c, const std::string& fragment) {
  try {
    plan_config(c);
    ADD_FAILURE() << "no error for " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// `set` (an assignment of a name) refused as invalid input naming the valid choices.
template <typename Set>
void expect_invalid_name(Set set, const std::string& fragment) {
  try {
    set();
    ADD_FAILURE() << "no error for " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(PlanTraining, RejectsBadNamesListingTheChoices) {
  TrainConfig c = base();
  c.model = "resnet21";
  expect_invalid(c, "resnet20");
  c = base();
  c.optimizer = static_cast<placement::OptimizerKind>(7);  // names are parsed before the plan
  expect_invalid(c, "optimizer");
  // The closed sets are typed values: a name is parsed (and refused) once, where it is set.
  expect_invalid_name([&] { c.order = "sideways"; }, "topo");
  expect_invalid_name([&] { c.placer = "oracle"; }, "greedy-eft");
  expect_invalid_name([&] { c.strategy = "mostly-global"; }, "nwise:N");
  expect_invalid_name([&] { c.pipeline = "zb"; }, "1f1b");
  expect_invalid_name([&] { c.interlock_mode = "product"; }, "sum");
  expect_invalid_name([&] { c.dataset = "imagenet"; }, "fashion-mnist");
  expect_invalid_name([&] { c.device = "tpu"; }, "cuda");
}

// A CUDA configuration plans like any other in a CUDA build (whether a GPU is present is
// the ranks' concern, in train); a build without CUDA refuses it as bad input.
TEST(PlanTraining, CudaNeedsACudaBuild) {
  TrainConfig c = base();
  c.device = "cuda";
#ifdef INTERPLACE_HAVE_CUDA
  EXPECT_EQ(plan_config(c).config.device, "cuda");
#else
  expect_invalid(c, "no CUDA backend");
#endif
}

TEST(PlanTraining, RejectsImpossibleCounts) {
  TrainConfig c = base();
  c.micro_batches = 3;
  expect_invalid(c, "divide");
  c = base();
  c.devices = 0;
  expect_invalid(c, "devices");
  c = base();
  c.steps = 0;
  expect_invalid(c, "steps");
  c = base();
  c.warmup_steps = -1;
  expect_invalid(c, "warmup");
}

TEST(PlanTraining, LocalNeedsAChainWithSingleTensorBoundaries) {
  TrainConfig c = base();
  c.placer = "round-robin";
  c.strategy = "local";
  expect_invalid(c, "cannot run on this placement");
  c.strategy = "global";
  const TrainPlan plan = plan_config(c);
  EXPECT_FALSE(plan.global_only_reason.empty());
}

// 1F1B is defined on stages: off a stage chain it is refused, never run as something
// else under its name; GPipe there runs the list schedule node by node.
TEST(PlanTraining, OneFOneBNeedsAStageChain) {
  TrainConfig c = base();
  c.placer = "round-robin";
  c.pipeline = "1f1b";
  expect_invalid(c, "pipeline '1f1b' cannot run on this placement (not a stage chain");
  c.pipeline = "gpipe";
  const TrainPlan plan = plan_config(c);
  EXPECT_EQ(plan.schedule.messages, placement::MessageLevel::node);
  EXPECT_EQ(plan.pipeline.kind, placement::PipelineKind::gpipe);
  c.placer = "contiguous";
  c.pipeline = "1f1b";
  const TrainPlan chain = plan_config(c);
  EXPECT_EQ(chain.schedule.messages, placement::MessageLevel::stage);
  EXPECT_EQ(chain.schedule.pipeline, placement::PipelineKind::one_f_one_b);
  c.pipeline = "zb-h1";
  const TrainPlan zb = plan_config(c);
  EXPECT_EQ(zb.schedule.pipeline, placement::PipelineKind::zb_h1);
  c.placer = "round-robin";
  expect_invalid(c, "pipeline 'zb-h1' cannot run on this placement (not a stage chain");
}

// ZB-H1 splits the global strategy's backward; a non-global strategy refuses it, naming
// what it runs.
TEST(PlanTraining, ZbH1IsForTheGlobalStrategyAlone) {
  TrainConfig c = base();
  c.pipeline = "zb-h1";
  c.strategy = "local";
  expect_invalid(c, "pipeline 'zb-h1' schedules the global strategy only");
  expect_invalid(c, "pipeline 1f1b");
  c.strategy = "global";
  EXPECT_EQ(plan_config(c).pipeline.kind, placement::PipelineKind::zb_h1);
}

// Interleaved 1F1B: the placer cuts K*V stages, rank j gets stages j, j + K, ..; the
// schedule has K lists of V chunks and the prediction K devices.
TEST(PlanTraining, InterleavedPlacesDevicesTimesVirtualStages) {
  TrainConfig c = base();
  c.pipeline = "interleaved-1f1b";
  c.virtual_stages = 2;
  c.micro_batches = 4;
  const TrainPlan plan = plan_config(c);
  EXPECT_EQ(plan.pipeline.kind, placement::PipelineKind::interleaved_1f1b);
  EXPECT_EQ(plan.stage_placement.device_count, 4);
  EXPECT_EQ(plan.placement.device_count, 2);
  ASSERT_EQ(plan.placement.device_of_node.size(), plan.stage_placement.device_of_node.size());
  for (size_t i = 0; i < plan.placement.device_of_node.size(); ++i) {
    EXPECT_EQ(plan.placement.device_of_node[i], plan.stage_placement.device_of_node[i] % 2);
  }
  EXPECT_EQ(plan.schedule.stage_count, 2);
  EXPECT_EQ(plan.schedule.virtual_stages, 2);
  EXPECT_EQ(plan.prediction.devices.size(), 2u);
  EXPECT_GT(plan.prediction.step_time_s, 0.0);
  // V = 1 is 1F1B, on K stages.
  c.virtual_stages = 1;
  const TrainPlan one = plan_config(c);
  c.pipeline = "1f1b";
  EXPECT_EQ(one.schedule.stage_actions, plan_config(c).schedule.stage_actions);
  EXPECT_EQ(one.stage_placement, one.placement);
}

// Data parallelism: batch_size stays the global mini-batch, the graph is one replica's
// micro-batch (B / (R M)), the schedule is a replica's (K lists) and the prediction adds
// each device's all-reduce over the R replicas.
TEST(PlanTraining, DataParallelPlansOneReplicaOfTheGlobalBatch) {
  TrainConfig c = base();
  c.batch_size = 32;
  c.micro_batches = 4;
  const TrainPlan single = plan_config(c);
  c.data_parallel = 2;
  EXPECT_EQ(c.ranks(), 4);
  EXPECT_EQ(c.replica_batch_size(), 16);
  const TrainPlan plan = plan_config(c);
  EXPECT_EQ(single.graph.batch_size(), 8);
  EXPECT_EQ(plan.graph.batch_size(), 4);
  EXPECT_EQ(plan.schedule.stage_count, 2);
  EXPECT_EQ(plan.prediction.data_parallel, 2);
  ASSERT_EQ(plan.prediction.devices.size(), 2u);
  for (const placement::DeviceStep& d : plan.prediction.devices) EXPECT_GT(d.allreduce_s, 0.0);
  EXPECT_NE(c.display_name().find(" R=2 "), std::string::npos) << c.display_name();
  c.data_parallel = 1;
  EXPECT_EQ(c.display_name().find("R="), std::string::npos) << c.display_name();
}

TEST(PlanTraining, DataParallelRefusesUnevenSlices) {
  TrainConfig c = base();
  c.batch_size = 30;
  c.data_parallel = 4;
  expect_invalid(c, "batch size 30 does not divide among 4 replicas");
  expect_invalid(c,
                 "HINT: use a multiple of data_parallel x micro_batches = 4, e.g. batch_size "
                 "28 or batch_size 32");
  c.batch_size = 32;
  c.micro_batches = 3;
  expect_invalid(c, "gives each of the 4 replicas 8 samples, which do not divide into 3");
  c.micro_batches = 1;
  c.data_parallel = 0;
  expect_invalid(c, "data_parallel must be in 1..");
}

TEST(PlanTraining, InterleavedRefusesWhatItCannotRun) {
  TrainConfig c = base();
  c.pipeline = "interleaved-1f1b";
  c.virtual_stages = 2;
  c.micro_batches = 1;
  expect_invalid(c, "needs micro_batches a multiple of the 2 devices, got 1");
  c.micro_batches = 2;
  c.virtual_stages = 0;
  expect_invalid(c, "virtual_stages must be in 1..");
  c.virtual_stages = 2;
  c.strategy = "local";
  expect_invalid(c, "pipeline 'interleaved-1f1b' schedules the global strategy only");
  expect_invalid(c, "HINT: --pipeline 1f1b");
  c.strategy = "global";
  c.pipeline = "1f1b";
  expect_invalid(
      c,
      "virtual_stages 2 is for the pipelines with virtual stages (interleaved-1f1b, looped-bfs, ");
  c.pipeline = "interleaved-1f1b";
  c.placer = "round-robin";
  expect_invalid(c, "pipeline 'interleaved-1f1b' cannot run on this placement of 4 stages");
}

// The names are parsed once, into the plan's fields.
TEST(PlanTraining, ParsesTheNamesOnce) {
  TrainConfig c = base();
  c.strategy = "nwise:2";
  c.interlock_mode = "sum";
  c.pipeline = "gpipe";  // ignored by non-global strategies
  c.devices = 3;
  TrainPlan plan;
  plan.config = c;
  parse_choices(plan);
  EXPECT_EQ(plan.strategy, placement::Strategy(placement::StrategyKind::nwise, 2));
  EXPECT_EQ(plan.reach, 1);
  EXPECT_EQ(plan.pipeline.kind, placement::PipelineKind::one_f_one_b);
  EXPECT_EQ(plan.interlock, placement::InterlockMode::sum);
  EXPECT_EQ(plan.device, kernels::Device::cpu);
  EXPECT_EQ(placement::to_string(plan.strategy), "nwise:2");
  EXPECT_THROW(plan.config.strategy = "nwise:0", Error);  // refused where it is set
}

// Refused while planning, so a sweep records it as skipped, not failed in training.
TEST(PlanTraining, RejectsADataSetTheModelCannotRead) {
  TrainConfig c = base();
  c.model = "gpt-mini";
  c.dataset = "fashion-mnist";
  expect_invalid(c, "data set fashion-mnist needs a model with input [1, 28, 28]");
  c = base();
  c.dataset = "text";
  expect_invalid(c, "data set text needs a model with input [T] of bytes");
}

TEST(PlanTraining, DoesNotFitInMemory) {
  TrainConfig c = base();
  // An H200's capacity lets the placer through; this host's memory does not.
  c.model = "vgg16";
  c.cost_device = "h200";
  c.batch_size = 1024;
  c.devices = 1;
  expect_invalid(c, "does not fit in memory");
}

// The same configuration on a GPU holds its weights and activations there: the host's
// memory is not its limit, the cost model's GPU is (planning needs no GPU).
TEST(PlanTraining, AGpuConfigurationIsCheckedAgainstTheGpuNotTheHost) {
#ifndef INTERPLACE_HAVE_CUDA
  GTEST_SKIP() << "a build without CUDA refuses device cuda (CudaNeedsACudaBuild)";
#else
  TrainConfig c = base();
  c.model = "vgg16";
  c.cost_device = "h200";
  c.batch_size = 1024;
  c.devices = 1;
  c.device = "cuda";
  const TrainPlan plan = plan_config(c);
  ASSERT_EQ(plan.prediction.devices.size(), 1u);
  EXPECT_GT(plan.prediction.devices[0].peak_memory_bytes, int64_t{24} << 30);  // > this host's
  EXPECT_LE(plan.prediction.devices[0].peak_memory_bytes, int64_t{141'000'000'000});
#endif
}

TEST(PlanTraining, BuildsTheGraphPerMicroBatch) {
  TrainConfig c = base();
  c.micro_batches = 4;
  const TrainPlan plan = plan_config(c);
  EXPECT_EQ(plan.graph.batch_size(), 2);
  EXPECT_EQ(plan.family, "resnet");
  EXPECT_EQ(plan.reach, 1);
  EXPECT_EQ(plan.placement.device_count, 2);
  EXPECT_GT(plan.prediction.step_time_s, 0.0);
  EXPECT_EQ(plan.parameter_count, plan.graph.total_parameter_count());
}

}  // namespace
}  // namespace interplace::runs

namespace interplace::runs {
namespace {

TEST(PlanTraining, EpochsBecomeSteps) {
  TrainConfig c = base();
  c.dataset = "fashion-mnist";
  c.batch_size = 100;  // 600 steps per epoch
  c.warmup_steps = 2;
  c.epochs = 1.5;
  EXPECT_EQ(plan_config(c).config.steps, 900 - 2);
  c.eval_epochs = {0.5, 1.5};
  EXPECT_NO_THROW(plan_config(c));
  c.eval_epochs = {2};  // after the run's end
  expect_invalid(c, "eval_epochs: epoch 2");
  // A training subset: epochs count in it (250 samples: 2 steps of 100 per epoch).
  c.train_samples = 250;
  c.eval_epochs = {0.5, 1.5};
  EXPECT_EQ(plan_config(c).config.steps, 3 - 2);
  c.eval_epoch_samples = 50;  // less than a micro-batch of 100
  expect_invalid(c, "eval_epoch_samples 50 is less than one micro-batch of 100");
  c.eval_epoch_samples = -1;
  expect_invalid(c, "eval_epoch_samples must be >= 0");
  c.eval_epoch_samples = 100;
  EXPECT_NO_THROW(plan_config(c));
  c.train_samples = 60001;
  expect_invalid(c, "train_samples 60001 is more than the 60000 training samples");
  // A validation split: epochs count in the 54000 samples left (540 steps of 100).
  c.train_samples = 0;
  c.validation_fraction = 0.1;
  EXPECT_EQ(plan_config(c).config.steps, 810 - 2);
  c.train_samples = 54001;
  expect_invalid(c, "train_samples 54001 is more than the 54000 training samples");
  c.train_samples = 0;
  c.validation_fraction = 0.75;
  expect_invalid(c, "validation_fraction must be in [0, 0.5]");
  c.validation_fraction = 0.1;
  c.eval_epochs.clear();
  expect_invalid(c, "HINT: give eval_epochs");
  c.validation_fraction = 0.0;
  c.eval_epochs.clear();
  c.epochs = 0.001;  // one step, taken by the warm-up
  expect_invalid(c, "none is left to measure");
  c.epochs = 0.0;  // steps count
  c.steps = 7;
  EXPECT_EQ(plan_config(c).config.steps, 7);
  // The learning rate of each step follows the schedule in the plan's units.
  c.lr_schedule.kind = LrScheduleKind::step;
  c.lr_schedule.milestones = {0.005};  // epochs: from step 3 on
  c.lr_schedule.unit = MilestoneUnit::epochs;
  c.learning_rate = 0.1;
  const TrainPlan plan = plan_config(c);
  EXPECT_DOUBLE_EQ(config_learning_rate(plan.config, 2), 0.1);
  EXPECT_DOUBLE_EQ(config_learning_rate(plan.config, 3), 0.1 * 0.1);
}

// The heads the plan predicts with are the runtime's (config_aux_heads): the study's
// 128/64 channels by default, which on resnet20's 16-channel boundary cost more than the
// proportional head (32/16), which costs more than the capped one (16/16).
TEST(PlanTraining, AuxHeadsCappedOnlyWhenAsked) {
  TrainConfig c = base();
  c.placer = "stages";
  c.strategy = "local";
  const TrainPlan uncapped = plan_config(c);
  c.aux_head = placement::AuxHeadWidth::proportional;
  const TrainPlan proportional = plan_config(c);
  c.aux_head = placement::AuxHeadWidth::capped;
  const TrainPlan capped = plan_config(c);
  EXPECT_EQ(config_aux_heads(uncapped.config).width, placement::AuxHeadWidth::study);
  EXPECT_EQ(config_aux_heads(proportional.config).width, placement::AuxHeadWidth::proportional);
  EXPECT_EQ(config_aux_heads(capped.config).width, placement::AuxHeadWidth::capped);
  EXPECT_GT(uncapped.prediction.devices[0].busy_s, proportional.prediction.devices[0].busy_s);
  EXPECT_GT(proportional.prediction.devices[0].busy_s, capped.prediction.devices[0].busy_s);
  EXPECT_GT(uncapped.prediction.devices[0].peak_memory_bytes,
            capped.prediction.devices[0].peak_memory_bytes);
}

TEST(PlanTraining, RecipeRefusals) {
  TrainConfig c = base();
  c.augmentation = Augmentation::crop_flip;
  EXPECT_NO_THROW(plan_config(c));  // resnet20 reads images
  c.model = "gpt-mini";
  c.dataset = "text";
  expect_invalid(c, "needs image samples");
  c.augmentation = Augmentation::none;
  c.epochs = 1;
  expect_invalid(c, "'text' has not");
  c = base();
  c.pipeline = "e2e";
  c.micro_batches = 2;
  expect_invalid(c, "micro_batches must be 1");
  c.micro_batches = 1;
  EXPECT_NO_THROW(plan_config(c));
  expect_invalid_name([&] { c.pipeline = "zigzag"; }, "e2e");  // the list of names has it
}

}  // namespace
}  // namespace interplace::runs
