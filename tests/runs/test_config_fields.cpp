// The configuration's schema (config_fields.hpp): one table that the spec, train's flags,
// the id and the result file read.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "interplace/kernels/error.hpp"
#include "interplace/placement/pipelines.hpp"
#include "interplace/runs/config_fields.hpp"
#include "interplace/runs/sweep_spec.hpp"

namespace interplace::runs {
namespace {

std::string read_doc(const std::string& name) {
  std::ifstream in(std::string(INTERPLACE_SOURCE_DIR) + "/docs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every line of the id present: the canonical string of this configuration was taken from
// the hand-written canonical_parameters before the table replaced it (2026-12-03), so ids
// of files already written keep matching (resume, merge).
TrainConfig everything_set() {
  TrainConfig c;
  c.model = "resnet20";
  c.graph_file = "g.json";
  c.graph_digest = "ac94de5d9899a282";
  c.devices = 4;
  c.pipeline = "interleaved-1f1b";
  c.virtual_stages = 2;
  c.data_parallel = 2;
  c.micro_batches = 4;
  c.batch_size = 64;
  c.warmup_steps = 2;
  c.steps = 13;
  c.dataset = "fashion-mnist";
  c.data_dir = "/tmp/data";
  c.epochs = 1.5;
  c.eval_epochs = {0.5, 1};
  c.eval_epoch_samples = 64;
  c.train_samples = 640;
  c.eval_samples = 16;
  c.optimizer = placement::OptimizerKind::adamw;
  c.learning_rate = 0.1;
  c.lr_schedule = {LrScheduleKind::step, {1, 2}, MilestoneUnit::epochs, 0.5, 1};
  c.augmentation = Augmentation::crop_flip;
  c.aux_head = placement::AuxHeadWidth::proportional;
  c.weight_decay_all = true;
  c.weight_decay = 0.0001;
  c.threads_per_rank = 1;
  c.seed = 3;
  c.interlock_mode = "sum";
  c.profile_path = "/tmp/p.tsv";
  c.model_options.width_multiplier = 0.5;
  return c;
}

TEST(ConfigFields, TheIdIsTheOneOfBeforeTheTable) {
  EXPECT_EQ(canonical_parameters(everything_set(), 0),
            "model=resnet20\norder=topo\nplacer=contiguous\ndevices=4\nstrategy=global\n"
            "pipeline=interleaved-1f1b\ninterlock_mode=sum\nmicro_batches=4\nbatch_size=64\n"
            "warmup_steps=2\nsteps=13\ndataset=fashion-mnist\neval_samples_requested=16\n"
            "optimizer=adamw\nlearning_rate=0.10000000000000001\nweight_decay=0.0001\nseed=3\n"
            "device=cpu\ncost_device=profile:/tmp/p.tsv\nmodel_options=width_multiplier=0.5\n"
            "data_dir=/tmp/data\nlr_schedule=step\nlr_milestones=1,2\nlr_milestone_unit=epochs\n"
            "lr_decay=0.5\nwarmup_lr_steps=1\nepochs=1.5\neval_epochs=0.5,1\n"
            "eval_epoch_samples=64\ntrain_samples=640\naugmentation=crop-flip\n"
            "aux_head=proportional\nweight_decay_all=1\nthreads_per_rank=1\ngraph_file=g.json\n"
            "graph_digest=ac94de5d9899a282\nvirtual_stages=2\ndata_parallel=2\nrepeat=0\n");
  EXPECT_EQ(config_id(everything_set(), 0), "68d9ba56a3a3b5cd");
  // A validation split enters the id after every older key, only when one is held out.
  TrainConfig validated;
  validated.validation_fraction = 0.1;
  EXPECT_NE(canonical_parameters(validated, 0)
                .find("\nvalidation_fraction=0.10000000000000001\nrepeat=0\n"),
            std::string::npos)
      << canonical_parameters(validated, 0);
  EXPECT_EQ(canonical_parameters(TrainConfig{}, 0).find("validation_fraction"), std::string::npos);
  // The capped width keeps its older line; the study's width has none.
  TrainConfig capped;
  capped.aux_head = placement::AuxHeadWidth::capped;
  const std::string text = canonical_parameters(capped, 2);
  EXPECT_NE(text.find("\naux_head_capped=1\nrepeat=2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("aux_head="), std::string::npos) << text;
  // A decay alone leaves the constant schedule's id as it was.
  TrainConfig decay;
  decay.lr_schedule.decay = 0.5;
  EXPECT_EQ(canonical_parameters(decay, 0), canonical_parameters(TrainConfig{}, 0));
}

// The canonical text of a few configurations, pinned before the closed sets became typed
// values (2026-12-07): the default, an end-to-end (e2e) one, and a local one learning its
// placement. Results under results/ and their resume depend on these ids.
TEST(ConfigFields, CanonicalTextOfTypedChoicesIsPinned) {
  EXPECT_EQ(canonical_parameters(TrainConfig{}, 0),
            "model=resnet20\norder=topo\nplacer=contiguous\ndevices=1\nstrategy=global\n"
            "pipeline=gpipe\ninterlock_mode=single\nmicro_batches=1\nbatch_size=32\n"
            "warmup_steps=1\nsteps=10\ndataset=synthetic\neval_samples_requested=0\n"
            "optimizer=sgd-momentum\nlearning_rate=0.050000000000000003\nweight_decay=0\n"
            "seed=1\ndevice=cpu\ncost_device=cpu-core\nmodel_options=\ndata_dir=\nrepeat=0\n");
  EXPECT_EQ(config_id(TrainConfig{}, 0), "9e9bacae307eac8d");
  TrainConfig e2e;
  e2e.devices = 2;
  e2e.order = "dfs-post";
  e2e.placer = "balanced";
  e2e.pipeline = "e2e";
  e2e.dataset = "fashion-mnist";
  e2e.device = "cuda";
  e2e.cost_device = "h100";
  EXPECT_EQ(canonical_parameters(e2e, 1),
            "model=resnet20\norder=dfs-post\nplacer=balanced\ndevices=2\nstrategy=global\n"
            "pipeline=e2e\ninterlock_mode=single\nmicro_batches=1\nbatch_size=32\n"
            "warmup_steps=1\nsteps=10\ndataset=fashion-mnist\neval_samples_requested=0\n"
            "optimizer=sgd-momentum\nlearning_rate=0.050000000000000003\nweight_decay=0\n"
            "seed=1\ndevice=cuda\ncost_device=h100\nmodel_options=\ndata_dir=\nrepeat=1\n");
  EXPECT_EQ(config_id(e2e, 1), "c12ccf7159d588df");
  TrainConfig local;
  local.devices = 4;
  local.strategy = "nwise:3";
  local.pipeline = "1f1b";
  local.interlock_mode = "sum";
  local.placer = "rl";
  local.rl_preset = placement::RlPreset::wang2022;
  local.simulate_only = true;
  local.order = "random-topo";
  local.dataset = "text";
  local.micro_batches = 4;
  EXPECT_EQ(canonical_parameters(local, 0),
            "model=resnet20\norder=random-topo\nplacer=rl\ndevices=4\nstrategy=nwise:3\n"
            "pipeline=1f1b\ninterlock_mode=sum\nmicro_batches=4\nbatch_size=32\n"
            "warmup_steps=1\nsteps=10\ndataset=text\neval_samples_requested=0\n"
            "optimizer=sgd-momentum\nlearning_rate=0.050000000000000003\nweight_decay=0\n"
            "seed=1\ndevice=cpu\ncost_device=cpu-core\nmodel_options=\ndata_dir=\n"
            "rl_preset=wang2022\nsimulate_only=1\nrepeat=0\n");
  EXPECT_EQ(config_id(local, 0), "fba971183dcdcdec");
  TrainConfig zb;
  zb.devices = 2;
  zb.pipeline = "zb-h1";
  zb.micro_batches = 8;
  zb.strategy = "pairwise";
  EXPECT_EQ(config_id(zb, 0), "2d72d183253602f1");
}

// The ids a spec's expansion gives, pinned with the canonical texts above: e2e forces one
// micro-batch, the other strategies keep the first pipeline they accept.
TEST(ConfigFields, SpecIdsArePinned) {
  const SweepSpec spec = parse_sweep_spec(R"(
models = ["resnet20"]
devices = 2
strategies = ["global", "local", "nwise:1"]
pipelines = ["e2e", "gpipe", "1f1b", "zb-h1"]
micro_batches = [1, 4]
interlock_modes = ["single", "sum"]
)",
                                          "pin.toml");
  std::string ids;
  for (const SweepConfig& c : spec.configs) ids += c.id + " " + c.train.display_name() + "\n";
  EXPECT_EQ(ids,
            "12fd51f5ab3a7fbd resnet20 topo contiguous K=2 global/e2e M=1 B=32\n"
            "4b918943e75f161c resnet20 topo contiguous K=2 global/e2e/sum M=1 B=32\n"
            "5e10548d716c466a resnet20 topo contiguous K=2 global/gpipe M=1 B=32\n"
            "9bb34e14decef3f1 resnet20 topo contiguous K=2 global/gpipe M=4 B=32\n"
            "3ff61e83efcaecfd resnet20 topo contiguous K=2 global/gpipe/sum M=1 B=32\n"
            "1180154070d56a0e resnet20 topo contiguous K=2 global/gpipe/sum M=4 B=32\n"
            "122c0369ab62d081 resnet20 topo contiguous K=2 global/1f1b M=1 B=32\n"
            "e4d3aaddf56e247a resnet20 topo contiguous K=2 global/1f1b M=4 B=32\n"
            "88278690f73e8e58 resnet20 topo contiguous K=2 global/1f1b/sum M=1 B=32\n"
            "bb7c2d182b17e02f resnet20 topo contiguous K=2 global/1f1b/sum M=4 B=32\n"
            "9f04d52ad4abbd4f resnet20 topo contiguous K=2 global/zb-h1 M=1 B=32\n"
            "f2f26bfa2ceebef8 resnet20 topo contiguous K=2 global/zb-h1 M=4 B=32\n"
            "4024c6e248a20e8a resnet20 topo contiguous K=2 global/zb-h1/sum M=1 B=32\n"
            "4ed5bdb27e538611 resnet20 topo contiguous K=2 global/zb-h1/sum M=4 B=32\n"
            "fe00d7dabbe4ac93 resnet20 topo contiguous K=2 local M=1 B=32\n"
            "eb0bdd5fd57e9df4 resnet20 topo contiguous K=2 local M=4 B=32\n"
            "1b3885c7b35e8f46 resnet20 topo contiguous K=2 local/sum M=1 B=32\n"
            "5d08d1866e894f15 resnet20 topo contiguous K=2 local/sum M=4 B=32\n"
            "692d9c99e84a5ef3 resnet20 topo contiguous K=2 nwise:1 M=1 B=32\n"
            "a96bc69b2920b154 resnet20 topo contiguous K=2 nwise:1 M=4 B=32\n"
            "1cc595fc04998326 resnet20 topo contiguous K=2 nwise:1/sum M=1 B=32\n"
            "7c74f2591573fcf5 resnet20 topo contiguous K=2 nwise:1/sum M=4 B=32\n");
}

TEST(ConfigFields, IdRanksAreDistinctAndNamesUnique) {
  std::set<int> ranks;
  std::set<std::string> names;
  for (const ConfigField& f : config_fields()) {
    EXPECT_TRUE(names.insert(f.key).second) << f.key;
    if (!f.plural.empty()) {
      EXPECT_TRUE(names.insert(f.plural).second) << f.plural;
    }
    if (f.in_id != Presence::never) {
      EXPECT_TRUE(ranks.insert(f.id_rank).second) << f.key;
      EXPECT_GE(f.id_rank, 1) << f.key;
    }
    EXPECT_EQ(f.in_id == Presence::when, static_cast<bool>(f.id_present)) << f.key;
    if (f.in_file == Presence::when) {
      EXPECT_EQ(f.in_id, Presence::when) << f.key;
    }
    EXPECT_TRUE(f.get && f.check) << f.key;
    if (!f.flag.empty()) {
      EXPECT_TRUE(f.set) << f.key;
    }
  }
}

// The id's ranks are 1..N: each row of the id has its place in kIdOrder, none is skipped.
TEST(ConfigFields, IdRanksCountFromOne) {
  std::set<int> ranks;
  for (const ConfigField& f : config_fields()) {
    if (f.in_id != Presence::never) ranks.insert(f.id_rank);
  }
  ASSERT_FALSE(ranks.empty());
  EXPECT_EQ(*ranks.begin(), 1);
  EXPECT_EQ(*ranks.rbegin(), static_cast<int>(ranks.size()));
}

const ConfigField& field(const std::string& key) {
  const int index = settable_index(key);
  if (index < 0) throw std::runtime_error("no settable key " + key);
  return settable_fields()[static_cast<size_t>(index)];
}

std::string error_of(const ConfigField& f, const std::string& text) {
  try {
    parse_field_text(f, text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The closed sets carry their registries' names (never a copy): a pipeline added to the
// registry is a value of `pipeline` with no edit here.
TEST(ConfigFields, ClosedSetsCarryTheirRegistrysNames) {
  std::vector<std::string> pipelines;
  for (const placement::PipelineInfo& p : placement::pipeline_registry()) {
    pipelines.emplace_back(p.name);
  }
  pipelines.emplace_back("e2e");
  ASSERT_TRUE(field("pipeline").values);
  EXPECT_EQ(field("pipeline").values(), pipelines);
  EXPECT_EQ(field("order").values(), placement::order_names());
  EXPECT_EQ(field("placer").values(), placement::placer_names());
  EXPECT_EQ(field("interlock_mode").values(), placement::interlock_mode_names());
  EXPECT_EQ(field("dataset").values(), dataset_names());
  EXPECT_EQ(field("strategy").values(), placement::strategy_forms());
  EXPECT_FALSE(field("steps").values);
  // Every pipeline reads as itself, and e2e as no pipeline.
  for (const std::string& name : pipelines) {
    TrainConfig c;
    field("pipeline").set(c, parse_field_text(field("pipeline"), name));
    EXPECT_EQ(to_string(c.pipeline), name);
    EXPECT_EQ(c.pipeline.end_to_end(), name == "e2e");
  }
  const std::string json = schema_json();
  for (const std::string& name : pipelines) {
    EXPECT_NE(json.find("\"" + name + "\""), std::string::npos) << name;
  }
}

// An unknown value lists the valid ones with a HINT: the closest name, or the schema.
TEST(ConfigFields, ClosedSetErrorsListTheValuesWithAHint) {
  const std::string order = error_of(field("order"), "dfs-pst");
  EXPECT_NE(order.find("(valid: topo, "), std::string::npos) << order;
  EXPECT_NE(order.find("HINT: did you mean 'dfs-post'?"), std::string::npos) << order;
  const std::string pipeline = error_of(field("pipeline"), "zigzag");
  EXPECT_NE(pipeline.find("unknown pipeline 'zigzag' (valid: gpipe, "), std::string::npos)
      << pipeline;
  EXPECT_NE(pipeline.find(", e2e). HINT: `interplace schema`"), std::string::npos) << pipeline;
  // One strategy, one spelling (and one id).
  EXPECT_NE(error_of(field("strategy"), "nwise:03").find("is written 'nwise:3'"),
            std::string::npos);
  EXPECT_EQ(error_of(field("strategy"), "nwise:3"), "");
  EXPECT_NE(error_of(field("strategy"), "nwise:0"), "");
}

// The typed values: parsed once from their names, compared as kinds.
TEST(ConfigFields, ChoicesAreTypedValues) {
  TrainConfig c;
  EXPECT_TRUE(c.pipeline == placement::PipelineKind::gpipe);
  EXPECT_FALSE(c.pipeline.end_to_end());
  c.pipeline = TrainPipeline::none();
  EXPECT_TRUE(c.pipeline.end_to_end());
  EXPECT_EQ(c.pipeline.scheduled(), placement::PipelineKind::gpipe);
  EXPECT_EQ(c.pipeline, TrainPipeline("e2e"));
  c.placer = "rl";
  EXPECT_TRUE(c.placer == placement::PlacerKind::rl);
  EXPECT_EQ(to_string(c.placer), "rl");
  c.order = placement::OrderKind::dfs_post_rev;
  EXPECT_EQ(to_string(c.order), "dfs-post-rev");
  c.device = "cuda";
  EXPECT_EQ(c.device.kind(), kernels::Device::cuda);
  EXPECT_THROW(c.order = "nowhere", Error);
  EXPECT_THROW(c.pipeline = "zigzag", Error);
  EXPECT_THROW(c.dataset = "mnist", Error);
}

// Every spec key is a flag of train (made from the row or by hand) or spec-only, with the
// reason; test_cli.py checks the flags against `train --help`.
TEST(ConfigFields, EverySpecKeyIsATrainFlagOrSpecOnly) {
  for (const ConfigField& f : settable_fields()) {
    EXPECT_NE(f.train_flag().empty(), f.spec_only.empty()) << f.key;
    EXPECT_FALSE(!f.flag.empty() && !f.hand_flag.empty()) << f.key << ": two flags";
  }
  EXPECT_EQ(field("simulate_only").train_flag(), "");
  EXPECT_EQ(field("seed").train_flag(), "--seed");
}

// What a key writes reads back to the same value, through the parse a flag uses.
TEST(ConfigFields, EveryKeyReadsBackWhatItWrites) {
  TrainConfig set = everything_set();
  set.graph_file.clear();  // its check reads the file
  for (const ConfigField& f : settable_fields()) {
    for (const TrainConfig& from : {TrainConfig{}, set}) {
      const FieldValue value = f.get(from);
      TrainConfig to;
      f.set(to, parse_field_text(f, value.text));
      EXPECT_EQ(f.get(to).text, value.text) << f.key;
    }
  }
}

TEST(ConfigFields, FlagsAreCheckedAsSpecValuesAre) {
  ASSERT_GE(settable_index("steps"), 0);
  const ConfigField* steps = &settable_fields()[static_cast<size_t>(settable_index("steps"))];
  EXPECT_EQ(steps->flag, "--steps");
  EXPECT_THROW(parse_field_text(*steps, "0"), Error);
  EXPECT_THROW(parse_field_text(*steps, "2x"), Error);
  EXPECT_EQ(parse_field_text(*steps, "7").integer, 7);
  try {
    parse_field_text(*steps, "0");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "steps must be >= 1, got 0");
  }
  ASSERT_GE(settable_index("orders"), 0);
  const ConfigField* orders = &settable_fields()[static_cast<size_t>(settable_index("orders"))];
  EXPECT_EQ(orders->key, "order");
  EXPECT_THROW(parse_field_text(*orders, "nowhere"), Error);
  EXPECT_THROW(parse_field_text(
                   settable_fields()[static_cast<size_t>(settable_index("learning_rate"))], "nan"),
               Error);
  EXPECT_EQ(settable_index("nope"), -1);
  EXPECT_EQ(settable_index("graph_digest"), -1);  // derived: no spec key
}

// The first cells of the tables of a page: "| `model`, `family` | str | ..." gives
// "`model`, `family`".
std::string first_cells(const std::string& page) {
  std::istringstream lines(page);
  std::string line, cells;
  while (std::getline(lines, line)) {
    if (line.starts_with("| `")) cells += line.substr(0, line.find(" | ")) + "\n";
  }
  return cells;
}

// The reference pages describe every key: docs/cli.md each spec key and flag, the
// attribute table of docs/results-format.md each attribute.
TEST(ConfigFields, DocsDescribeEveryKey) {
  const std::string cli = read_doc("cli.md");
  const std::string attributes = first_cells(read_doc("results-format.md"));
  ASSERT_FALSE(cli.empty());
  ASSERT_FALSE(attributes.empty());
  for (const ConfigField& f : settable_fields()) {
    EXPECT_NE(cli.find("`" + f.key), std::string::npos) << f.key << " in docs/cli.md";
    if (!f.flag.empty()) {
      EXPECT_NE(cli.find("`" + f.flag), std::string::npos) << f.flag << " in docs/cli.md";
    }
  }
  for (const ConfigField& f : config_fields()) {
    if (f.in_file == Presence::never) continue;
    EXPECT_NE(attributes.find("`" + f.attribute_name() + "`"), std::string::npos)
        << f.attribute_name() << " in the attribute table of docs/results-format.md";
  }
}

}  // namespace
}  // namespace interplace::runs
