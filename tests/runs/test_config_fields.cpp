// The configuration's schema (config_fields.hpp): one table that the spec, train's flags,
// the id and the result file read.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "interplace/kernels/error.hpp"
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
