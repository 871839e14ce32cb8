// Sweep specs: expansion order, exclusions, repeats, ids, and errors with file and line.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include <filesystem>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/auto_profile.hpp"
#include "interplace/runs/sweep.hpp"
#include "interplace/runs/sweep_spec.hpp"

namespace interplace::runs {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_sweep_spec(text, "spec.toml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    return e.what();
  }
  return "(no error)";
}

TEST(SweepSpec, ExpandsTheCrossProductLastDimensionFastest) {
  const SweepSpec spec = parse_sweep_spec(R"(
models = ["resnet20", "gpt-mini"]
orders = ["topo", "dfs-pre"]
placers = ["contiguous", "balanced"]
devices = [1, 2]
steps = 3
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 16u);
  EXPECT_EQ(spec.configs[0].train.model, "resnet20");
  EXPECT_EQ(spec.configs[0].train.devices, 1);
  EXPECT_EQ(spec.configs[0].train.order, "topo");
  EXPECT_EQ(spec.configs[0].train.placer, "contiguous");
  EXPECT_EQ(spec.configs[1].train.placer, "balanced");  // placer turns before order
  EXPECT_EQ(spec.configs[2].train.order, "dfs-pre");
  EXPECT_EQ(spec.configs[4].train.devices, 2);
  EXPECT_EQ(spec.configs[8].train.model, "gpt-mini");
  for (size_t i = 0; i < spec.configs.size(); ++i) {
    EXPECT_EQ(spec.configs[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(spec.configs[i].train.steps, 3);
  }
}

TEST(SweepSpec, ExclusionsDropConfigurationsMatchingAllTheirKeys) {
  const SweepSpec spec = parse_sweep_spec(R"(
models = ["resnet20", "gpt-mini"]
datasets = ["fashion-mnist", "text"]
devices = [1, 2]
[[exclude]]
model = "resnet20"
dataset = "text"
[[exclude]]
model = "gpt-mini"
dataset = ["fashion-mnist"]
devices = 2
)",
                                          "spec.toml");
  // 8 - 2 (resnet20 on text) - 1 (gpt-mini on fashion-mnist with 2 devices)
  ASSERT_EQ(spec.configs.size(), 5u);
  for (const SweepConfig& c : spec.configs) {
    EXPECT_FALSE(c.train.model == "resnet20" && c.train.dataset == "text");
    EXPECT_FALSE(c.train.model == "gpt-mini" && c.train.dataset == "fashion-mnist" &&
                 c.train.devices == 2);
  }
}

TEST(SweepSpec, RepeatsAreDistinctConfigurationsWithDistinctIds) {
  const SweepSpec spec = parse_sweep_spec("repeats = 3\n", "spec.toml");
  ASSERT_EQ(spec.configs.size(), 3u);
  EXPECT_EQ(spec.configs[2].repeat, 2);
  EXPECT_NE(spec.configs[0].id, spec.configs[1].id);
  EXPECT_NE(spec.configs[1].id, spec.configs[2].id);
}

TEST(SweepSpec, ShardsKeepEveryRepeatOfASettingTogether) {
  const SweepSpec spec = parse_sweep_spec(
      "repeats = 3\norders = [\"topo\", \"bfs\", \"dfs-pre\", \"lexical\", \"random\"]\n",
      "spec.toml");
  ASSERT_EQ(spec.configs.size(), 15u);
  std::map<int64_t, std::set<int>> shard_of_setting;
  size_t total = 0;
  for (int i = 0; i < 2; ++i) {
    for (const SweepConfig* c : select_configs(spec, "", Shard{i, 2})) {
      shard_of_setting[c->setting].insert(i);
      ++total;
    }
  }
  EXPECT_EQ(total, 15u);
  ASSERT_EQ(shard_of_setting.size(), 5u);
  for (const auto& [setting, shards] : shard_of_setting) EXPECT_EQ(shards.size(), 1u) << setting;
}

TEST(SweepSpec, RepeatsRunRoundByRoundEachRoundShuffled) {
  const SweepSpec spec = parse_sweep_spec(
      "repeats = 3\norders = [\"topo\", \"bfs\", \"dfs-pre\", \"lexical\", \"random\", "
      "\"topo-rev\", \"bfs-rev\", \"dfs-post\"]\n",
      "spec.toml");
  const std::vector<const SweepConfig*> all = select_configs(spec, "", Shard{});
  const std::vector<const SweepConfig*> order = interleave_repeats(all);
  ASSERT_EQ(order.size(), 24u);
  std::vector<std::vector<int64_t>> rounds(3);
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i]->repeat, static_cast<int>(i / 8)) << "position " << i;
    rounds[order[i]->repeat].push_back(order[i]->setting);
  }
  for (const auto& round : rounds) {  // every setting once per round
    EXPECT_EQ(std::set<int64_t>(round.begin(), round.end()).size(), 8u);
  }
  // Shuffled: not the spec's order, and not the same order in every round.
  const std::vector<int64_t> spec_order = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_FALSE(rounds[0] == spec_order && rounds[1] == spec_order && rounds[2] == spec_order);
  EXPECT_FALSE(rounds[0] == rounds[1] && rounds[1] == rounds[2]);
  // Deterministic: the same order from the same configurations, whatever order they came in.
  std::vector<const SweepConfig*> reversed(all.rbegin(), all.rend());
  EXPECT_EQ(interleave_repeats(reversed), order);
  // Without repeats, the spec's order.
  const SweepSpec single = parse_sweep_spec("orders = [\"topo\", \"bfs\", \"dfs-pre\"]\n", "s");
  const std::vector<const SweepConfig*> once = select_configs(single, "", Shard{});
  EXPECT_EQ(interleave_repeats(once), once);
}

TEST(SweepSpec, PipelinesOnlyMultiplyTheGlobalStrategy) {
  const SweepSpec spec = parse_sweep_spec(R"(
strategies = ["global", "local"]
pipelines = ["gpipe", "1f1b"]
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 3u);
  EXPECT_EQ(spec.configs[2].train.strategy, "local");
  EXPECT_EQ(spec.configs[2].train.pipeline, "gpipe");
}

// zb-h1 schedules the global strategy alone: the others take the next pipeline listed,
// or 1f1b.
TEST(SweepSpec, ZbH1OnlyMultipliesTheGlobalStrategy) {
  const SweepSpec spec = parse_sweep_spec(R"(
strategies = ["global", "local"]
pipelines = ["zb-h1", "gpipe"]
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 3u);
  EXPECT_EQ(spec.configs[0].train.pipeline, "zb-h1");
  EXPECT_EQ(spec.configs[1].train.pipeline, "gpipe");
  EXPECT_EQ(spec.configs[2].train.strategy, "local");
  EXPECT_EQ(spec.configs[2].train.pipeline, "gpipe");
  const SweepSpec alone = parse_sweep_spec(R"(
strategies = ["global", "pairwise"]
pipeline = "zb-h1"
)",
                                           "spec.toml");
  ASSERT_EQ(alone.configs.size(), 2u);
  EXPECT_EQ(alone.configs[0].train.pipeline, "zb-h1");
  EXPECT_EQ(alone.configs[1].train.pipeline, "1f1b");
}

// interleaved-1f1b is the global strategy's alone, and virtual_stages its alone: the
// other pipelines take V = 1 (their duplicates dropped), and the id says V only when not 1.
TEST(SweepSpec, VirtualStagesOnlyMultiplyInterleaved) {
  const SweepSpec spec = parse_sweep_spec(R"(
strategies = ["global", "local"]
pipelines = ["interleaved-1f1b", "1f1b"]
virtual_stages = [1, 2]
micro_batches = 4
devices = 2
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 4u);
  EXPECT_EQ(spec.configs[0].train.pipeline, "interleaved-1f1b");
  EXPECT_EQ(spec.configs[0].train.virtual_stages, 1);
  EXPECT_EQ(spec.configs[1].train.pipeline, "interleaved-1f1b");
  EXPECT_EQ(spec.configs[1].train.virtual_stages, 2);
  EXPECT_EQ(spec.configs[2].train.pipeline, "1f1b");
  EXPECT_EQ(spec.configs[2].train.virtual_stages, 1);
  EXPECT_EQ(spec.configs[3].train.strategy, "local");
  EXPECT_EQ(spec.configs[3].train.pipeline, "1f1b");
  EXPECT_EQ(spec.configs[3].train.virtual_stages, 1);
  EXPECT_NE(spec.configs[0].id, spec.configs[1].id);
  EXPECT_EQ(canonical_parameters(spec.configs[0].train, 0).find("virtual_stages"),
            std::string::npos);
  EXPECT_NE(canonical_parameters(spec.configs[1].train, 0).find("virtual_stages=2\n"),
            std::string::npos);
  EXPECT_THROW(parse_sweep_spec("virtual_stages = 0\n", "spec.toml"), Error);
}

// data_parallel is a dimension like any count (every strategy and pipeline takes it); the
// id and the file say it only when not 1, so that earlier ids stay as they were.
// profile:auto measures the graph a rank runs: one replica's micro-batch, B / (R x M).
TEST(AutoProfile, MeasuresOneReplicasMicroBatch) {
  TrainConfig replicated;
  replicated.model = "resnet20";
  replicated.devices = 2;
  replicated.batch_size = 64;
  replicated.micro_batches = 4;
  replicated.data_parallel = 2;
  TrainConfig alone = replicated;
  alone.data_parallel = 1;
  EXPECT_EQ(auto_profile_request(replicated, 1).options.batch_size, 8);
  EXPECT_EQ(auto_profile_request(alone, 1).options.batch_size, 16);
  EXPECT_NE(auto_profile_key(replicated, 1).text.find("micro_batch_size=8\n"), std::string::npos);
  EXPECT_NE(auto_profile_key(replicated, 1).id, auto_profile_key(alone, 1).id);
}

TEST(SweepSpec, DataParallelIsADimensionNamedInTheIdWhenNotOne) {
  const SweepSpec spec = parse_sweep_spec(R"(
strategies = ["global", "local"]
data_parallel = [1, 2]
batch_size = 8
devices = 2
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 4u);
  int replicated = 0;
  for (const SweepConfig& config : spec.configs) {
    const std::string line = canonical_parameters(config.train, 0);
    if (config.train.data_parallel == 2) {
      ++replicated;
      EXPECT_NE(line.find("data_parallel=2\n"), std::string::npos) << line;
    } else {
      EXPECT_EQ(line.find("data_parallel"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(replicated, 2);
  EXPECT_NE(spec.configs[0].id, spec.configs[1].id);
  EXPECT_THROW(parse_sweep_spec("data_parallel = 0\n", "spec.toml"), Error);
}

TEST(SweepSpec, ModelOptionsApplyToAllModelsAndPerModelTablesOverride) {
  const SweepSpec spec = parse_sweep_spec(R"(
models = ["resnet20", "gpt-mini"]
[model_options]
width_multiplier = 0.5
[model_options.gpt-mini]
sequence_length = 32
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 2u);
  EXPECT_EQ(spec.configs[0].train.model_options.width_multiplier, 0.5);
  EXPECT_EQ(spec.configs[0].train.model_options.sequence_length, 0);
  EXPECT_EQ(spec.configs[1].train.model_options.sequence_length, 32);
  EXPECT_EQ(spec.configs[1].train.model_options.width_multiplier, 0.5);
  EXPECT_EQ(model_options_string(spec.configs[1].train.model_options),
            "sequence_length=32,width_multiplier=0.5");
  // The typed values the result files store as model_option_<key> attributes.
  const std::vector<ModelOptionValue> values =
      model_option_values(spec.configs[1].train.model_options);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].key, "sequence_length");
  EXPECT_TRUE(values[0].integer);
  EXPECT_EQ(values[0].int_value, 32);
  EXPECT_EQ(values[1].key, "width_multiplier");
  EXPECT_FALSE(values[1].integer);
  EXPECT_EQ(values[1].real_value, 0.5);
  EXPECT_TRUE(model_option_values(placement::ModelOptions{}).empty());
}

// A seeded family's set stands for its members; a table named by the family applies to
// all of them, a member's own table wins (docs/models.md).
TEST(SweepSpec, FamilySetsExpandToTheirMembers) {
  const SweepSpec spec = parse_sweep_spec(R"(
models = ["enas-rnn:0..2", "resnet20", "nmt:5"]
[model_options.enas-rnn]
sequence_length = 12
[model_options."enas-rnn:1"]
sequence_length = 6
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 5u);
  EXPECT_EQ(spec.configs[0].train.model, "enas-rnn:0");
  EXPECT_EQ(spec.configs[2].train.model, "enas-rnn:2");
  EXPECT_EQ(spec.configs[3].train.model, "resnet20");
  EXPECT_EQ(spec.configs[4].train.model, "nmt:5");
  EXPECT_EQ(spec.configs[0].train.model_options.sequence_length, 12);
  EXPECT_EQ(spec.configs[1].train.model_options.sequence_length, 6);
  EXPECT_EQ(spec.configs[2].train.model_options.sequence_length, 12);
  EXPECT_EQ(spec.configs[3].train.model_options.sequence_length, 0);
  EXPECT_EQ(spec.configs[4].train.model_options.sequence_length, 0);
  EXPECT_NE(spec.configs[0].id, spec.configs[1].id);
  EXPECT_NE(error_of("models = [\"enas-cnn:3..1\"]\n").find("spec.toml:1: model set"),
            std::string::npos);
  EXPECT_NE(error_of("models = [\"resnet20:0..3\"]\n").find("no seeded family"), std::string::npos);
  EXPECT_NE(error_of("models = [\"nmt:1\"]\n[model_options.enas-cnn]\nlayers = 1\n")
                .find("model_options.enas-cnn is for a model the spec does not sweep"),
            std::string::npos);
}

TEST(SweepSpec, ProfileCostDevices) {
  const SweepSpec spec = parse_sweep_spec("cost_device = \"profile:/tmp/p.tsv\"\n", "spec.toml");
  EXPECT_EQ(spec.configs[0].train.profile_path, "/tmp/p.tsv");
  EXPECT_EQ(cost_device_string(spec.configs[0].train), "profile:/tmp/p.tsv");
}

// The optimiser names of every subcommand: "sgd" is plain SGD, the default is momentum SGD.
TEST(SweepSpec, OptimizerNamesAreTheCostModels) {
  const SweepSpec spec =
      parse_sweep_spec("optimizers = [\"sgd\", \"sgd-momentum\", \"adamw\"]\n", "spec.toml");
  ASSERT_EQ(spec.configs.size(), 3u);
  EXPECT_EQ(spec.configs[0].train.optimizer, placement::OptimizerKind::sgd);
  EXPECT_EQ(spec.configs[1].train.optimizer, placement::OptimizerKind::sgd_momentum);
  EXPECT_EQ(spec.configs[2].train.optimizer, placement::OptimizerKind::adamw);
  EXPECT_EQ(parse_sweep_spec("", "spec.toml").configs[0].train.optimizer,
            placement::OptimizerKind::sgd_momentum);
  EXPECT_NE(error_of("optimizer = \"lion\"\n").find("sgd-momentum"), std::string::npos);
}

// The recipe's keys: names into enums, lists as one string each, epochs into steps.
TEST(SweepSpec, RecipeKeys) {
  const SweepSpec spec = parse_sweep_spec(R"(
dataset = "fashion-mnist"
batch_size = 128
warmup_steps = 1
epochs = 2
eval_epochs = "1,2"
lr_schedule = "step"
lr_milestones = "1, 1.5"
lr_milestone_unit = "epochs"
lr_decay = 0.2
warmup_lr_steps = 5
augmentation = "crop-flip"
optimizers = ["sgd-nesterov"]
)",
                                          "spec.toml");
  ASSERT_EQ(spec.configs.size(), 1u);
  const TrainConfig& c = spec.configs[0].train;
  EXPECT_EQ(c.steps, 2 * 468 - 1);  // floor(60000 / 128) steps per epoch, less the warm-up
  EXPECT_EQ(c.eval_epochs, (std::vector<double>{1, 2}));
  EXPECT_EQ(c.lr_schedule.kind, LrScheduleKind::step);
  EXPECT_EQ(c.lr_schedule.milestones, (std::vector<double>{1, 1.5}));
  EXPECT_EQ(c.lr_schedule.unit, MilestoneUnit::epochs);
  EXPECT_EQ(c.lr_schedule.decay, 0.2);
  EXPECT_EQ(c.lr_schedule.warmup_steps, 5);
  EXPECT_EQ(c.augmentation, Augmentation::crop_flip);
  EXPECT_EQ(c.optimizer, placement::OptimizerKind::sgd_nesterov);
  EXPECT_FALSE(c.weight_decay_all);
  EXPECT_EQ(c.aux_head, placement::AuxHeadWidth::study);
  EXPECT_EQ(c.train_samples, 0);
  EXPECT_EQ(c.eval_epoch_samples, 0);
  // A training subset: epochs count in its 1000 samples (7 steps of 128).
  const SweepSpec subset = parse_sweep_spec(
      "dataset = \"fashion-mnist\"\nbatch_size = 128\nepochs = 2\ntrain_samples = 1000\n"
      "eval_epochs = \"1,2\"\neval_epoch_samples = 256\n",
      "spec.toml");
  EXPECT_EQ(subset.configs[0].train.steps, 2 * 7 - 1);
  EXPECT_EQ(subset.configs[0].train.train_samples, 1000);
  EXPECT_EQ(subset.configs[0].train.eval_epoch_samples, 256);
  EXPECT_NE(error_of("train_samples = -1\n").find("train_samples must be >= 0"), std::string::npos);
  EXPECT_NE(error_of("dataset = \"text\"\nmodel = \"gpt-mini\"\ntrain_samples = 10\n")
                .find("takes no training subset"),
            std::string::npos);
  const SweepSpec flags =
      parse_sweep_spec("weight_decay_all = 1\naux_head_capped = 1\n", "spec.toml");
  EXPECT_TRUE(flags.configs[0].train.weight_decay_all);
  EXPECT_EQ(flags.configs[0].train.aux_head, placement::AuxHeadWidth::capped);
  EXPECT_NE(flags.configs[0].id, parse_sweep_spec("", "spec.toml").configs[0].id);
  EXPECT_NE(error_of("weight_decay_all = 2\n").find("weight_decay_all must be in 0..1, got 2"),
            std::string::npos);
  EXPECT_NE(error_of("lr_schedule = \"linear\"\n").find("spec.toml:1: unknown learning-rate"),
            std::string::npos);
  EXPECT_NE(error_of("lr_milestones = \"3,2\"\n").find("strictly ascending"), std::string::npos);
  EXPECT_NE(error_of("lr_decay = 1.5\n").find("lr_decay must be in (0, 1]"), std::string::npos);
  EXPECT_NE(error_of("augmentation = \"mixup\"\n").find("unknown augmentation"), std::string::npos);
  // Epochs need a data set whose size is known; milestones need the step schedule.
  EXPECT_NE(error_of("dataset = \"text\"\nmodel = \"gpt-mini\"\nepochs = 1\n").find("'text'"),
            std::string::npos);
  EXPECT_NE(error_of("lr_milestones = \"3\"\n").find("step schedule"), std::string::npos);
}

// e2e: the global strategy as one unpipelined pass, whatever micro_batches lists.
TEST(SweepSpec, EndToEndBaselineHasOneMicroBatch) {
  const SweepSpec spec = parse_sweep_spec(R"(
devices = 2
strategies = ["global", "local"]
pipelines = ["e2e", "gpipe"]
micro_batches = [1, 4]
)",
                                          "spec.toml");
  // global/e2e M=1 (once), global/gpipe M=1 and M=4, local M=1 and M=4.
  ASSERT_EQ(spec.configs.size(), 5u);
  EXPECT_EQ(spec.configs[0].train.pipeline, "e2e");
  EXPECT_EQ(spec.configs[0].train.micro_batches, 1);
  EXPECT_EQ(spec.configs[1].train.pipeline, "gpipe");
  EXPECT_EQ(spec.configs[3].train.strategy, "local");
}

TEST(SweepSpec, ErrorsNameTheFileTheLineAndTheReason) {
  EXPECT_EQ(error_of("models = [\"resnet20\"]\nmodle = 1\n").substr(0, 40),
            "spec.toml:2: unknown key 'modle' (valid:");
  EXPECT_NE(error_of("\n\norders = [\"topo\", \"sideways\"]\n")
                .find("spec.toml:3: unknown order "
                      "'sideways'"),
            std::string::npos);
  EXPECT_NE(error_of("models = [\"resnet21\"]\n").find("spec.toml:1: unknown model 'resnet21'"),
            std::string::npos);
  EXPECT_EQ(error_of("steps = 3\ndevices = [1, 0]\n"), "spec.toml:2: devices must be >= 1, got 0");
  EXPECT_EQ(error_of("orders = []\n"), "spec.toml:1: 'orders' is an empty list");
  EXPECT_EQ(error_of("\nsteps = \"3\"\n"), "spec.toml:2: steps takes integers, got string");
  EXPECT_NE(error_of("strategies = [\"global\", \"nwise:0\"]\n").find("spec.toml:1: "),
            std::string::npos);
  EXPECT_NE(error_of("pipelines = \"zigzag\"\n").find("spec.toml:1: unknown pipeline"),
            std::string::npos);
  EXPECT_EQ(error_of("learning_rate = -1.0\n"),
            "spec.toml:1: learning_rate must be a finite number > 0, got -1");
  EXPECT_EQ(error_of("model = \"resnet20\"\nmodels = [\"vgg16\"]\n"),
            "spec.toml:2: both 'model' and 'models' are given");
  EXPECT_NE(error_of("[model_options]\nbatch_size = 4\n")
                .find("spec.toml:2: unknown model "
                      "option 'batch_size'"),
            std::string::npos);
  EXPECT_EQ(error_of("[model_options.vgg16]\nclasses = 4\n").substr(0, 66),
            "spec.toml:1: model_options.vgg16 is for a model the spec does not ");
  EXPECT_NE(error_of("[[exclude]]\nplacr = \"x\"\n")
                .find("spec.toml:2: unknown key 'placr' in "
                      "[[exclude]]"),
            std::string::npos);
  EXPECT_EQ(error_of("devices = 2\n[[exclude]]\ndevices = 2\n"),
            "spec.toml: the exclusions drop every configuration");
  EXPECT_EQ(error_of("repeats = 0\n"), "spec.toml:1: repeats must be >= 1, got 0");
}

TEST(SweepSpec, SyntaxErrorsNameTheLine) {
  const std::string message = error_of("steps = 3\norders = topo\nseed = 1\n");
  EXPECT_EQ(message.substr(0, 12), "spec.toml:2:") << message;
  EXPECT_NE(message.find("TOML syntax error"), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// aux_head names the heads' widths; aux_head_capped = 1 stays its older spelling with the
// same ids, and giving both is refused.
TEST(SweepSpec, AuxHeadWidthsAndTheirIds) {
  auto one = [](const std::string& key) {
    const SweepSpec spec = parse_sweep_spec("strategy = \"local\"\n" + key, "spec.toml");
    EXPECT_EQ(spec.configs.size(), 1u);
    return spec.configs.front();
  };
  const SweepConfig study = one(""), capped_old = one("aux_head_capped = 1\n"),
                    capped = one("aux_head = \"capped\"\n"),
                    proportional = one("aux_head = \"proportional\"\n");
  EXPECT_EQ(study.train.aux_head, placement::AuxHeadWidth::study);
  EXPECT_EQ(capped_old.train.aux_head, placement::AuxHeadWidth::capped);
  EXPECT_EQ(proportional.train.aux_head, placement::AuxHeadWidth::proportional);
  EXPECT_EQ(capped.id, capped_old.id);
  EXPECT_EQ(one("aux_head = \"study\"\n").id, study.id);
  EXPECT_EQ(one("aux_head_capped = 0\n").id, study.id);
  EXPECT_NE(proportional.id, study.id);
  EXPECT_NE(proportional.id, capped.id);
  EXPECT_NE(error_of("aux_head = \"wide\"\n").find("unknown auxiliary head width 'wide'"),
            std::string::npos);
  EXPECT_NE(error_of("aux_head = \"capped\"\naux_head_capped = 1\n")
                .find("aux_head and aux_head_capped are both given"),
            std::string::npos);
}

TEST(SweepSpec, DeepNestingIsRefusedBeforeParsing) {
  // 100,000 levels overflowed toml11's recursive parser (SIGSEGV) before the check.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string message = error_of("steps = 3\na = " + deep + "\n");
  EXPECT_EQ(message.rfind("spec.toml:2: nested more than 32 levels deep", 0), 0u) << message;
  EXPECT_NE(message.find("HINT: "), std::string::npos);
  // Inline tables, dotted keys and table headers nest too.
  std::string inline_tables = "a = ";
  for (int i = 0; i < 40; ++i) inline_tables += "{b = ";
  inline_tables += "1" + std::string(40, '}') + "\n";
  EXPECT_NE(error_of(inline_tables).find("spec.toml:1: nested more than"), std::string::npos);
  std::string dotted = "steps = 3\n\nx";
  for (int i = 0; i < 40; ++i) dotted += ".x";
  EXPECT_NE(error_of(dotted + " = 1\n").find("spec.toml:3: nested more"), std::string::npos);
  EXPECT_NE(error_of("[" + dotted.substr(11) + "]\n").find("spec.toml:1: nested more"),
            std::string::npos);
  // From the command line: named by the override, cut short.
  try {
    parse_sweep_spec("steps = 2\n", "spec.toml", {"devices=" + deep});
    FAIL() << "no error";
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_EQ(message.rfind("override 'devices=[[[[", 0), 0u) << message.substr(0, 300);
  EXPECT_NE(message.find("...': nested more than 32 levels"), std::string::npos);
  EXPECT_LT(message.size(), 400u);
}

TEST(SweepSpec, NestingInStringsCommentsAndFloatsDoesNotCount) {
  const std::string brackets(100, '[');
  std::string text = "steps = 3 # " + brackets + "\nlearning_rate = 0.001\n";
  text += "name_a = \"" + brackets + "\"\nname_b = '" + brackets + "'\n";
  text += "name_c = \"\"\"\n" + brackets + " \\\" \n\"\"\"\ndevices = [1, 2]\n";
  text += "[model_options.gpt-mini]\nwidth_multiplier = 0.5\n";
  // toml11 rejects the unknown keys after the nesting check passes them.
  const std::string message = error_of(text);
  EXPECT_EQ(message.find("nested"), std::string::npos) << message;
  EXPECT_NE(message.find("name_"), std::string::npos) << message;
  // 32 levels pass the check (toml11 then parses them, and the spec refuses the key).
  const std::string at_limit = "devices = " + std::string(32, '[') + "1" + std::string(32, ']');
  EXPECT_EQ(error_of(at_limit).find("nested"), std::string::npos);
  const std::string over = "devices = " + std::string(33, '[') + "1" + std::string(33, ']');
  EXPECT_NE(error_of(over).find("nested"), std::string::npos);
}

TEST(SweepSpec, MissingFileIsInvalidInput) {
  try {
    load_sweep_spec("/nonexistent/spec.toml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/spec.toml"), std::string::npos);
  }
}

std::vector<std::string> ids(const SweepSpec& spec) {
  std::vector<std::string> out;
  for (const SweepConfig& c : spec.configs) out.push_back(c.id);
  return out;
}

TEST(SweepSpecOverrides, BehaveAsTheEditedFile) {
  const std::string text = "models = [\"resnet20\", \"gpt-mini\"]\ndevices = [1, 2]\nsteps = 4\n";
  const SweepSpec edited = parse_sweep_spec(
      "model = \"resnet20\"\ndevices = [2, 4]\nsteps = 3\nlearning_rate = 0.001\n"
      "[model_options]\nwidth_multiplier = 0.5\n",
      "edited.toml");
  const SweepSpec overridden =
      parse_sweep_spec(text, "spec.toml",
                       {"steps=3", "devices=2,4", "models=resnet20", "learning_rate=1e-3",
                        "model_options.width_multiplier=0.5"});
  EXPECT_EQ(ids(overridden), ids(edited));
  EXPECT_EQ(overridden.overrides.size(), 5u);
  EXPECT_EQ(overridden.text, text);  // the file as read; the overrides are kept apart
  // TOML values and later overrides winning.
  EXPECT_EQ(ids(parse_sweep_spec(text, "spec.toml",
                                 {"devices=[2, 4]", "steps=9", "steps=3", "model=\"resnet20\"",
                                  "learning_rate=0.001", "model_options.width_multiplier=0.5"})),
            ids(edited));
}

TEST(SweepSpecOverrides, DropPerModelTablesOfModelsNoLongerSwept) {
  const SweepSpec spec = parse_sweep_spec(
      "models = [\"resnet20\", \"gpt-mini\"]\n[model_options.gpt-mini]\nlayers = 2\n", "spec.toml",
      {"models=resnet20"});
  ASSERT_EQ(spec.configs.size(), 1u);
  EXPECT_EQ(spec.configs[0].train.model, "resnet20");
}

TEST(SweepSpecOverrides, ErrorsNameTheOverrideAndTheValidKeys) {
  auto error = [](const std::vector<std::string>& overrides) {
    try {
      parse_sweep_spec("steps = 2\n", "spec.toml", overrides);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error({"steps=0"}), "override 'steps=0': steps must be >= 1, got 0");
  EXPECT_NE(error({"stepz=3"}).find("override 'stepz=3': unknown key 'stepz' (valid: model/models"),
            std::string::npos);
  EXPECT_NE(error({"stepz=3"}).find("model_options.MODEL.OPTION"), std::string::npos);
  EXPECT_NE(error({"steps"}).find("overrides are key=value"), std::string::npos);
  EXPECT_EQ(error({"placers=contiguous,nowhere"}),
            "override 'placers=contiguous,nowhere': unknown placer 'nowhere' (valid: " +
                error({"placer=nowhere"}).substr(error({"placer=nowhere"}).find("(valid: ") + 8));
  EXPECT_EQ(error({"steps=x"}), "override 'steps=x': steps takes integers, got string");
  // A list kept in one string, given as a list: the hint shows the quoting.
  EXPECT_EQ(error({"eval_epochs=1,2,3"}),
            "override 'eval_epochs=1,2,3': eval_epochs takes strings, got integer. HINT: quote "
            "it; a list kept in one string is one quoted value: eval_epochs = \"1,5,10\" in a "
            "spec, eval_epochs='\"1,5,10\"' on the command line");
  EXPECT_EQ(
      parse_sweep_spec("steps = 2\n", "spec.toml", {"lr_schedule=step", "lr_milestones=\"1,2\""})
          .configs.at(0)
          .train.lr_schedule.milestones,
      (std::vector<double>{1, 2}));
  EXPECT_EQ(error({"model_options.nope=1"})
                .rfind("override 'model_options.nope=1': unknown model option 'nope'", 0),
            0u);
  EXPECT_NE(error({"devices=[1"}).find("not a TOML value"), std::string::npos);
}

TEST(ConfigId, IsFnv1a64OfTheCanonicalParameters) {
  // Reference values of FNV-1a 64 (the offset basis, and "a").
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  const TrainConfig config;
  EXPECT_EQ(canonical_parameters(config, 0),
            "model=resnet20\norder=topo\nplacer=contiguous\ndevices=1\nstrategy=global\n"
            "pipeline=gpipe\ninterlock_mode=single\nmicro_batches=1\nbatch_size=32\n"
            "warmup_steps=1\nsteps=10\ndataset=synthetic\neval_samples_requested=0\n"
            "optimizer=sgd-momentum\nlearning_rate=0.050000000000000003\nweight_decay=0\n"
            "seed=1\ndevice=cpu\ncost_device=cpu-core\nmodel_options=\ndata_dir=\nrepeat=0\n");
  char expected[17];
  std::snprintf(expected, sizeof expected, "%016llx",
                static_cast<unsigned long long>(fnv1a64(canonical_parameters(config, 0))));
  EXPECT_EQ(config_id(config, 0), expected);
  EXPECT_EQ(config_id(config, 0).size(), 16u);
}

TEST(ConfigId, IsStableAcrossSpecsAndChangesWithEveryParameter) {
  const SweepSpec a = parse_sweep_spec("models = [\"resnet20\", \"vgg16\"]\nseed = 7\n", "a.toml");
  const SweepSpec b =
      parse_sweep_spec("# another file\nseeds = [7]\nmodel = \"vgg16\"\n", "b.toml");
  EXPECT_EQ(a.configs[1].id, b.configs[0].id);
  EXPECT_NE(a.configs[0].id, a.configs[1].id);
  TrainConfig changed;
  changed.learning_rate = 0.050000001;
  EXPECT_NE(config_id(changed, 0), config_id(TrainConfig{}, 0));
  changed = {};
  changed.model_options.width_multiplier = 0.5;
  EXPECT_NE(config_id(changed, 0), config_id(TrainConfig{}, 0));
}

}  // namespace
}  // namespace interplace::runs

namespace interplace::runs {
namespace {

// A graph file's network in a spec (docs/your-network.md): the model is the graph's name,
// the path and the file's digest enter the id (only then), and `model` beside it is refused.
TEST(SweepSpec, GraphFilesNameTheModelAndEnterTheId) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "interplace-spec-graph.json";
  placement::write_graph_file(path, placement::build_model("resnet20", {.batch_size = 1}),
                              "resnet");
  const std::string text = "graph_file = \"" + path.string() + "\"\nsteps = 2\n";
  const SweepSpec spec = parse_sweep_spec(text, "spec.toml");
  ASSERT_EQ(spec.configs.size(), 1u);
  const TrainConfig& c = spec.configs[0].train;
  EXPECT_EQ(c.model, "resnet20");
  EXPECT_EQ(c.graph_file, path.string());
  EXPECT_EQ(c.graph_digest, placement::graph_file_digest(path));
  EXPECT_EQ(c.graph_family, "resnet");
  const std::string canonical = canonical_parameters(c, 0);
  EXPECT_NE(canonical.find("\ngraph_file=" + path.string() + "\ngraph_digest=" + c.graph_digest +
                           "\nrepeat=0\n"),
            std::string::npos)
      << canonical;
  // The zoo's resnet20 with the same parameters: another id, and no graph lines in it.
  const SweepSpec zoo = parse_sweep_spec("model = \"resnet20\"\nsteps = 2\n", "spec.toml");
  EXPECT_NE(zoo.configs[0].id, spec.configs[0].id);
  EXPECT_EQ(canonical_parameters(zoo.configs[0].train, 0).find("graph_"), std::string::npos);
  // An edited file is another configuration.
  placement::write_graph_file(path, placement::build_model("resnet20", {.batch_size = 2}),
                              "resnet");
  EXPECT_NE(parse_sweep_spec(text, "spec.toml").configs[0].id, spec.configs[0].id);

  EXPECT_NE(error_of(text + "model = \"resnet20\"\n").find("'model' or 'graph_file', not both"),
            std::string::npos);
  EXPECT_NE(error_of("graph_file = \"/nonexistent/g.json\"\n").find("spec.toml:1"),
            std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace interplace::runs
