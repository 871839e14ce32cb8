// Result files without MPI: a written configuration reads back, bad files are refused with
// one clear line, merge refuses what it must.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <hdf5_hl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "interplace/kernels/error.hpp"
#include "interplace/runs/results_file.hpp"

namespace interplace::runs {
namespace {

namespace fs = std::filesystem;

class ResultsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("interplace_results_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

Provenance provenance() {
  Provenance p;
  p.hosts = {"node1", "node2"};
  p.devices = {"cpu", "cpu"};
  p.node_local_ranks = {0, 0};  // two hosts, one rank each
  p.created_utc = "2026-11-29T19:00:00Z";
  p.spec_path = "smoke.toml";
  p.spec_text = "steps = 3\n";
  return p;
}

SweepConfig config(uint64_t seed) {
  SweepConfig c;
  c.train.seed = seed;
  c.train.devices = 2;
  c.index = static_cast<int64_t>(seed);
  c.id = config_id(c.train, 0);
  return c;
}

TrainResult result() {
  TrainResult r;
  for (int s = 0; s < 4; ++s) {
    StepRecord step;
    step.step = s;
    step.warmup = s == 0;
    step.step_time_s = s == 0 ? 9.0 : 0.1 * s;  // warm-up excluded from the median
    step.loss = 3.0 - s;
    step.ranks.resize(2);
    step.aux_loss = {1.0, NAN};
    r.steps.push_back(step);
  }
  r.samples_per_s = 123.0;
  r.eval_accuracy = 0.75;
  r.hosts = {"a", "b"};
  return r;
}

herr_t take_scale_name(hid_t, unsigned, hid_t scale, void* name) {
  char text[64] = {};
  H5DSget_scale_name(scale, text, sizeof text);
  *static_cast<std::string*>(name) = text;
  return 1;  // the first scale is enough
}

// The name of the dimension scale attached to axis `axis` of `dataset` ("" when none).
std::string axis_name(const std::string& file, const std::string& dataset, unsigned axis) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  std::string name;
  if (d >= 0 && H5DSget_num_scales(d, axis) == 1) {
    H5DSiterate_scales(d, axis, nullptr, take_scale_name, &name);
  }
  if (d >= 0) H5Dclose(d);
  H5Fclose(f);
  return name;
}

int64_t int_attribute(const std::string& file, const std::string& object, const char* name) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
  const hid_t a = H5Aopen(o, name, H5P_DEFAULT);
  int64_t value = -1;
  if (a < 0 || H5Aread(a, H5T_NATIVE_INT64, &value) < 0) value = -1;
  if (a >= 0) H5Aclose(a);
  H5Oclose(o);
  H5Fclose(f);
  return value;
}

std::string string_attribute(const std::string& file, const std::string& object, const char* name) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
  const hid_t a = H5Aopen(o, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  char* text = nullptr;
  H5Aread(a, type, &text);
  std::string value = text != nullptr ? text : "(none)";
  H5free_memory(text);
  H5Tclose(type);
  H5Aclose(a);
  H5Oclose(o);
  H5Fclose(f);
  return value;
}

// Every dimension-scale attachment in the group `group` of `file`, one line each:
// "<dataset> <axis> <scale>" (paths relative to the group), checked to hold both ways
// (H5DSis_attached reads the dataset's DIMENSION_LIST and the scale's REFERENCE_LIST).
struct AttachmentWalk {
  std::string group;
  std::string dataset;
  unsigned axis = 0;
  hid_t set = -1;
  std::vector<std::string> lines;
};

herr_t note_attachment(hid_t, unsigned axis, hid_t scale, void* data) {
  auto* walk = static_cast<AttachmentWalk*>(data);
  char name[512] = {};
  H5Iget_name(scale, name, sizeof name);
  std::string scale_path = name;
  if (scale_path.rfind(walk->group + "/", 0) == 0) scale_path.erase(0, walk->group.size() + 1);
  const bool both_ways = H5DSis_attached(walk->set, scale, axis) > 0;
  walk->lines.push_back(walk->dataset + " " + std::to_string(axis) + " " + scale_path +
                        (both_ways ? "" : " (one way only)"));
  return 0;
}

herr_t visit_dataset(hid_t group, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto* walk = static_cast<AttachmentWalk*>(data);
  const hid_t set = H5Dopen2(group, name, H5P_DEFAULT);
  const hid_t space = H5Dget_space(set);
  walk->dataset = name;
  walk->set = set;
  for (int axis = 0; axis < H5Sget_simple_extent_ndims(space); ++axis) {
    if (H5DSget_num_scales(set, static_cast<unsigned>(axis)) > 0) {
      H5DSiterate_scales(set, static_cast<unsigned>(axis), nullptr, note_attachment, walk);
    }
  }
  H5Sclose(space);
  H5Dclose(set);
  return 0;
}

std::vector<std::string> attachments(const std::string& file, const std::string& group) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t g = H5Gopen2(f, group.c_str(), H5P_DEFAULT);
  AttachmentWalk walk;
  walk.group = group;
  H5Ovisit2(g, H5_INDEX_NAME, H5_ITER_INC, visit_dataset, &walk, H5O_INFO_BASIC);
  H5Gclose(g);
  H5Fclose(f);
  std::sort(walk.lines.begin(), walk.lines.end());
  return walk.lines;
}

// Format 3: every per-step and per-rank dataset of a trained configuration is named by
// the step and rank scales of its group.
void expect_scales(const std::string& file, const std::string& id) {
  const std::string g = "/configs/" + id + "/";
  EXPECT_EQ(axis_name(file, g + "ranks/step_s", 0), "step") << file;
  EXPECT_EQ(axis_name(file, g + "ranks/step_s", 1), "rank") << file;
  EXPECT_EQ(axis_name(file, g + "steps/aux_loss", 1), "rank") << file;
  EXPECT_EQ(axis_name(file, g + "steps/loss", 0), "step") << file;
  EXPECT_EQ(axis_name(file, g + "timeline/kind", 0), "event") << file;
  EXPECT_EQ(string_attribute(file, g + "ranks/step_s", "units"), "s");
  EXPECT_EQ(string_attribute(file, g + "ranks/bytes_sent", "units"), "bytes");
  EXPECT_EQ(string_attribute(file, g + "step", "long_name"), "step (warm-up and measured)");
}

TEST_F(ResultsFile, ConfigurationsReadBack) {
  const std::string file = path("r.h5");
  create_results_file(file, provenance());
  const TrainResult trained = result();
  ConfigRecord ok{config(1), "ok", "", "2026-11-29T19:00:01Z", 1.5, nullptr, &trained, ""};
  ConfigRecord skipped{config(2), "skipped", "needs 4 ranks, the job has 2", "", 0.0, nullptr,
                       nullptr,   ""};
  EXPECT_GE(append_config(file, ok), 0.0);
  append_config(file, skipped);
  EXPECT_FALSE(fs::exists(file + ".tmp"));

  const ResultsSummary s = read_results_file(file);
  EXPECT_EQ(s.format_name, "interplace-results");
  EXPECT_EQ(s.format_version, 3);
  EXPECT_EQ(s.shard, "0/1");
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    for (const auto& [name, expected] :
         {std::pair{"shard_index", 0}, std::pair{"shard_count", 1}}) {
      int64_t value = -1;
      const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
      H5Aread(a, H5T_NATIVE_INT64, &value);
      H5Aclose(a);
      EXPECT_EQ(value, expected) << name;
    }
    H5Fclose(f);
  }
  EXPECT_EQ(s.spec_text, "steps = 3\n");
  ASSERT_EQ(s.configs.size(), 2u);
  EXPECT_EQ(s.configs[0].id, ok.config.id);
  EXPECT_EQ(s.configs[0].status, "ok");
  EXPECT_EQ(s.configs[0].name, ok.config.train.display_name());
  EXPECT_DOUBLE_EQ(s.configs[0].median_step_s, 0.2);
  EXPECT_DOUBLE_EQ(s.configs[0].final_loss, 0.0);
  EXPECT_DOUBLE_EQ(s.configs[0].samples_per_s, 123.0);
  EXPECT_DOUBLE_EQ(s.configs[0].eval_accuracy, 0.75);
  EXPECT_EQ(s.configs[1].status, "skipped");
  EXPECT_EQ(s.configs[1].reason, "needs 4 ranks, the job has 2");
  EXPECT_TRUE(std::isnan(s.configs[1].median_step_s));
  expect_scales(file, ok.config.id);
}

std::vector<double> doubles(const std::string& file, const std::string& dataset) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  std::vector<double> out;
  if (d >= 0) {
    const hid_t space = H5Dget_space(d);
    out.resize(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
    H5Sclose(space);
    H5Dclose(d);
  }
  H5Fclose(f);
  return out;
}

// The recipe: the rate of every step, the evaluations during training as their own table
// with its own scale, and the recipe's options as attributes.
TEST_F(ResultsFile, LearningRatesAndEvaluations) {
  const std::string file = path("r.h5");
  create_results_file(file, provenance());
  TrainResult trained = result();
  for (int s = 0; s < 4; ++s) trained.steps[static_cast<size_t>(s)].learning_rate = 0.1 / (s + 1);
  trained.evaluations = {{.epoch = 0.5, .step = 1, .loss = 1.5, .accuracy = 0.4, .samples = 96},
                         {.epoch = 1.0, .step = 3, .loss = 1.0, .accuracy = 0.6, .samples = 96}};
  SweepConfig c = config(1);
  c.train.lr_schedule.kind = LrScheduleKind::step;
  c.train.lr_schedule.milestones = {91, 136};
  c.train.lr_schedule.unit = MilestoneUnit::epochs;
  c.train.eval_epochs = {0.5, 1};
  c.train.augmentation = Augmentation::crop_flip;
  c.train.train_samples = 4000;
  c.train.eval_epoch_samples = 2048;
  c.id = config_id(c.train, 0);
  EXPECT_NE(c.id, config(1).id);  // the recipe is part of the question
  append_config(file, {c, "ok", "", "2026-11-29T19:00:01Z", 1.5, nullptr, &trained, ""});
  const std::string g = "/configs/" + c.id + "/";
  EXPECT_EQ(doubles(file, g + "steps/learning_rate"),
            (std::vector<double>{0.1, 0.05, 0.1 / 3, 0.025}));
  EXPECT_EQ(axis_name(file, g + "steps/learning_rate", 0), "step");
  EXPECT_EQ(string_attribute(file, g + "steps/learning_rate", "units"), "1");
  EXPECT_EQ(doubles(file, g + "evaluations/epoch"), (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(doubles(file, g + "evaluations/step"), (std::vector<double>{1, 3}));
  EXPECT_EQ(doubles(file, g + "evaluations/accuracy"), (std::vector<double>{0.4, 0.6}));
  EXPECT_EQ(doubles(file, g + "evaluations/loss"), (std::vector<double>{1.5, 1.0}));
  EXPECT_EQ(axis_name(file, g + "evaluations/accuracy", 0), "evaluation");
  EXPECT_EQ(string_attribute(file, g + "evaluations/loss", "long_name"),
            "test loss (mean over the test split)");
  EXPECT_EQ(string_attribute(file, g, "lr_schedule"), "step");
  EXPECT_EQ(string_attribute(file, g, "lr_milestones"), "91,136");
  EXPECT_EQ(string_attribute(file, g, "lr_milestone_unit"), "epochs");
  EXPECT_EQ(string_attribute(file, g, "eval_epochs"), "0.5,1");
  EXPECT_EQ(string_attribute(file, g, "augmentation"), "crop-flip");
  EXPECT_EQ(int_attribute(file, g, "train_samples"), 4000);
  EXPECT_EQ(int_attribute(file, g, "eval_epoch_samples"), 2048);
  EXPECT_TRUE(doubles(file, g + "evaluations/validation_accuracy").empty());  // none held out
  // With a validation split, its columns beside the test split's.
  TrainResult validated = trained;
  validated.evaluations[0].validation_loss = 1.4;
  validated.evaluations[0].validation_accuracy = 0.45;
  validated.evaluations[0].validation_samples = 64;
  validated.evaluations[1].validation_loss = 0.9;
  validated.evaluations[1].validation_accuracy = 0.65;
  validated.evaluations[1].validation_samples = 64;
  SweepConfig v = c;
  v.train.validation_fraction = 0.1;
  v.id = config_id(v.train, 0);
  EXPECT_NE(v.id, c.id);
  append_config(file, {v, "ok", "", "2026-11-29T19:00:02Z", 1.5, nullptr, &validated, ""});
  const std::string gv = "/configs/" + v.id + "/";
  EXPECT_EQ(doubles(file, gv + "evaluations/validation_accuracy"),
            (std::vector<double>{0.45, 0.65}));
  EXPECT_EQ(doubles(file, gv + "evaluations/validation_loss"), (std::vector<double>{1.4, 0.9}));
  EXPECT_EQ(doubles(file, gv + "evaluations/validation_samples"), (std::vector<double>{64, 64}));
  EXPECT_EQ(axis_name(file, gv + "evaluations/validation_accuracy", 0), "evaluation");
  EXPECT_EQ(doubles(file, gv + "evaluations/accuracy"), (std::vector<double>{0.4, 0.6}));
  EXPECT_EQ(string_attribute(file, gv + "evaluations/validation_loss", "long_name"),
            "validation loss (mean over the validation split)");
  // Without evaluations the table is absent.
  const TrainResult plain = result();
  const SweepConfig other = config(2);
  append_config(file, {other, "ok", "", "", 1.0, nullptr, &plain, ""});
  EXPECT_TRUE(doubles(file, "/configs/" + other.id + "/evaluations/epoch").empty());
}

TEST_F(ResultsFile, NeverOverwritesAndRefusesDuplicateIds) {
  const std::string file = path("r.h5");
  create_results_file(file, provenance());
  EXPECT_THROW(create_results_file(file, provenance()), Error);
  ConfigRecord record{config(1), "skipped", "x", "", 0.0, nullptr, nullptr, "", ""};
  append_config(file, record);
  EXPECT_THROW(append_config(file, record), Error);
  EXPECT_EQ(read_results_file(file).configs.size(), 1u);  // the failed append left it alone
}

std::string read_error(const std::string& file) {
  try {
    read_results_file(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(ResultsFile, RefusesFilesThatAreNotResultFiles) {
  std::ofstream(path("text.h5")) << "not hdf5 at all\n";
  EXPECT_EQ(read_error(path("text.h5")),
            path("text.h5") + " is not an HDF5 file (an interplace result file was expected)");
  EXPECT_EQ(read_error(path("missing.h5")), path("missing.h5") + ": no such file");

  const hid_t plain = H5Fcreate(path("plain.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(plain);
  EXPECT_NE(read_error(path("plain.h5")).find("not an interplace result file"), std::string::npos);

  // Other format versions: rewrite the attribute of a real file. 1 and 2 are read, 4 not.
  for (const int64_t version : {int64_t{1}, int64_t{2}, int64_t{4}}) {
    const std::string name = path("v" + std::to_string(version) + ".h5");
    create_results_file(name, provenance());
    const hid_t file = H5Fopen(name.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attr = H5Aopen(file, "format_version", H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_INT64, &version);
    H5Aclose(attr);
    H5Fclose(file);
  }
  EXPECT_EQ(read_results_file(path("v1.h5")).format_version, 1);
  EXPECT_EQ(read_results_file(path("v2.h5")).format_version, 2);
  EXPECT_EQ(read_error(path("v4.h5")),
            path("v4.h5") + " has result format version 4; this interplace reads versions 1 to 3");

  // A truncated result file.
  create_results_file(path("cut.h5"), provenance());
  fs::resize_file(path("cut.h5"), 1000);
  const std::string cut = read_error(path("cut.h5"));
  EXPECT_NE(cut.find(path("cut.h5")), std::string::npos) << cut;
  EXPECT_EQ(cut.find('\n'), std::string::npos);
}

// The summary table (/summary): its columns read with the HDF5 C API alone.
std::vector<std::string> summary_strings(const std::string& file, const char* column) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, ("summary/" + std::string(column)).c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  std::vector<char*> texts(static_cast<size_t>(H5Sget_simple_extent_npoints(space)), nullptr);
  const hid_t type = H5Dget_type(d);
  if (!texts.empty()) H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, texts.data());
  std::vector<std::string> out;
  for (char* t : texts) {
    out.emplace_back(t != nullptr ? t : "");
    H5free_memory(t);
  }
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

std::vector<double> summary_doubles(const std::string& file, const char* column) {
  return doubles(file, "summary/" + std::string(column));
}

// Group ids of /configs, in name order.
std::vector<std::string> group_ids(const std::string& file) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t g = H5Gopen2(f, "configs", H5P_DEFAULT);
  H5G_info_t info;
  H5Gget_info(g, &info);
  std::vector<std::string> ids;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[64] = {};
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
    ids.emplace_back(name);
  }
  H5Gclose(g);
  H5Fclose(f);
  return ids;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(ResultsFile, SummaryTableSaysWhatTheGroupsSay) {
  const std::string file = path("s.h5");
  create_results_file(file, provenance());
  EXPECT_TRUE(summary_strings(file, "id").empty());  // made with the file, empty
  const TrainResult trained = result();
  append_config(file, {config(1), "ok", "", "2026-11-29T19:00:01Z", 1.5, nullptr, &trained, ""});
  append_config(file, {config(2), "skipped", "needs 4 ranks", "", 0.0, nullptr, nullptr, ""});
  const ConfigRecord more[2] = {
      {config(3), "failed", "boom \"x\"\n", "", 2.0, nullptr, nullptr, ""},
      {config(4), "ok", "", "", 1.0, nullptr, &trained, ""}};
  append_configs(file, more);
  const std::vector<std::string> ids = summary_strings(file, "id");
  ASSERT_EQ(ids,
            (std::vector<std::string>{config(1).id, config(2).id, config(3).id, config(4).id}));
  EXPECT_EQ(sorted(ids), group_ids(file));
  const std::vector<std::string> status = summary_strings(file, "status");
  EXPECT_EQ(status, (std::vector<std::string>{"ok", "skipped", "failed", "ok"}));
  EXPECT_EQ(summary_strings(file, "reason")[2], "boom \"x\"\n");
  // As read_results_file (inspect) computes from the steps: median of the measured steps.
  const ResultsSummary s = read_results_file(file);
  const std::vector<double> step = summary_doubles(file, "step_time_s");
  const std::vector<double> loss = summary_doubles(file, "final_loss");
  const std::vector<double> measured = summary_doubles(file, "measured_steps");
  for (const StoredConfig& c : s.configs) {
    const size_t row = static_cast<size_t>(std::find(ids.begin(), ids.end(), c.id) - ids.begin());
    ASSERT_LT(row, ids.size());
    if (std::isnan(c.median_step_s)) {
      EXPECT_TRUE(std::isnan(step[row])) << c.id;
      EXPECT_EQ(measured[row], 0.0);
    } else {
      EXPECT_DOUBLE_EQ(step[row], c.median_step_s) << c.id;
      EXPECT_DOUBLE_EQ(loss[row], c.final_loss) << c.id;
      EXPECT_EQ(measured[row], 3.0);
    }
  }
  EXPECT_DOUBLE_EQ(summary_doubles(file, "samples_per_s")[0], 123.0);
  EXPECT_TRUE(std::isnan(summary_doubles(file, "samples_per_s")[1]));
  // Every attribute, in JSON: strings escaped, floats as floats.
  const std::string json = summary_strings(file, "attributes")[2];
  EXPECT_NE(json.find("\"reason\":\"boom \\\"x\\\"\\u000a\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"wall_s\":2.0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"id\":\"" + config(3).id + "\""), std::string::npos) << json;
}

TEST_F(ResultsFile, SummaryTableIsBuiltForFilesWithoutOne) {
  const std::string file = path("old.h5");
  create_results_file(file, provenance());
  const TrainResult trained = result();
  append_config(file, {config(1), "ok", "", "", 1.0, nullptr, &trained, ""});
  {  // a file from before the table
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(H5Ldelete(f, "summary", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  append_config(file, {config(2), "ok", "", "", 1.0, nullptr, &trained, ""});
  EXPECT_EQ(sorted(summary_strings(file, "id")), group_ids(file));
  EXPECT_EQ(summary_strings(file, "id").size(), 2u);
  EXPECT_DOUBLE_EQ(summary_doubles(file, "step_time_s")[0], 0.2);
}

// read_results_file (inspect, merge, --resume) lists the configurations from the summary
// table when it describes the groups, and gives what the groups give.
TEST_F(ResultsFile, ListsConfigurationsFromTheSummaryTableAsFromTheGroups) {
  const std::string file = path("listed.h5");
  create_results_file(file, provenance());
  const TrainResult trained = result();
  append_config(file, {config(1), "ok", "", "", 1.0, nullptr, &trained, ""});
  append_config(file, {config(2), "skipped", "why", "", 1.0, nullptr, nullptr, ""});
  append_config(file, {config(3), "failed", "boom", "", 1.0, nullptr, nullptr, ""});
  const ResultsSummary from_table = read_results_file(file);
  const std::string old_file = path("listed-old.h5");
  std::filesystem::copy_file(file, old_file);
  {
    const hid_t f = H5Fopen(old_file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(H5Ldelete(f, "summary", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  const ResultsSummary from_groups = read_results_file(old_file);
  ASSERT_EQ(from_table.configs.size(), 3u);
  ASSERT_EQ(from_groups.configs.size(), 3u);
  const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  for (size_t i = 0; i < 3; ++i) {
    const StoredConfig& a = from_table.configs[i];
    const StoredConfig& b = from_groups.configs[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_TRUE(same(a.median_step_s, b.median_step_s)) << a.median_step_s;
    EXPECT_TRUE(same(a.samples_per_s, b.samples_per_s)) << a.samples_per_s;
    EXPECT_TRUE(same(a.final_loss, b.final_loss)) << a.final_loss;
    EXPECT_TRUE(same(a.eval_accuracy, b.eval_accuracy)) << a.eval_accuracy;
  }
  EXPECT_EQ(from_table.configs[0].status, "ok");
  EXPECT_DOUBLE_EQ(from_table.configs[0].median_step_s, 0.2);
  EXPECT_EQ(from_table.configs[1].reason, "why");
  EXPECT_TRUE(std::isnan(from_table.configs[1].median_step_s));

  // A status damaged in the table is refused with the row and its group named.
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t set = H5Dopen2(f, "summary/status", H5P_DEFAULT);
    const hid_t type = H5Dget_type(set);
    const char* values[] = {"ok", "done", "failed"};
    ASSERT_GE(H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), 0);
    H5Tclose(type);
    H5Dclose(set);
    H5Fclose(f);
  }
  try {
    read_results_file(file);
    FAIL() << "a damaged summary row was read";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/summary row 1 (group /configs/" + config(2).id + ")"), std::string::npos)
        << what;
    EXPECT_NE(what.find("attribute 'status' is 'done'"), std::string::npos) << what;
  }

  // A table that does not list the groups (one deleted by hand) is not used: the groups are.
  const std::string edited = path("listed-edited.h5");
  std::filesystem::copy_file(file, edited);
  {
    const hid_t f = H5Fopen(edited.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(H5Ldelete(f, ("configs/" + config(2).id).c_str(), H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  const ResultsSummary after_edit = read_results_file(edited);
  ASSERT_EQ(after_edit.configs.size(), 2u);
  EXPECT_EQ(after_edit.configs[1].status, "failed");
}

// How /configs of `file` keeps its links: HDF5's old symbol table (one local heap for all
// the names) made each added group cost more as the group grew (8x from 20k to 100k).
H5G_storage_type_t configs_storage(const std::string& file) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  H5G_info_t info{};
  if (f < 0 || H5Gget_info_by_name(f, "configs", &info, H5P_DEFAULT) < 0)
    info.storage_type = H5G_STORAGE_TYPE_UNKNOWN;
  if (f >= 0) H5Fclose(f);
  return info.storage_type;
}

TEST_F(ResultsFile, ConfigurationsAreKeptInTheScalableLinkStorage) {
  const TrainResult trained = result();
  for (const char* name : {"a.h5", "b.h5"}) {
    create_results_file(path(name), provenance());
    EXPECT_EQ(configs_storage(path(name)), H5G_STORAGE_TYPE_COMPACT) << name;
  }
  for (uint64_t seed = 1; seed <= 12; ++seed) {  // past the compact limit (8 links)
    append_config(path(seed % 2 ? "a.h5" : "b.h5"),
                  {config(seed), "ok", "", "", 1.0, nullptr, &trained, ""});
  }
  EXPECT_EQ(configs_storage(path("a.h5")), H5G_STORAGE_TYPE_COMPACT);  // 6 links
  merge_results_files({path("a.h5"), path("b.h5")}, path("m.h5"));
  EXPECT_EQ(configs_storage(path("m.h5")), H5G_STORAGE_TYPE_DENSE);
}

TEST_F(ResultsFile, MergeRebuildsTheSummaryTable) {
  create_results_file(path("a.h5"), provenance());
  create_results_file(path("b.h5"), provenance());
  const TrainResult trained = result();
  append_config(path("a.h5"), {config(1), "ok", "", "", 1.0, nullptr, &trained, ""});
  append_config(path("a.h5"), {config(3), "skipped", "why", "", 1.0, nullptr, nullptr, ""});
  append_config(path("b.h5"), {config(2), "failed", "boom", "", 1.0, nullptr, nullptr, ""});
  {  // b from before the table: merge makes the rows from the groups
    const hid_t f = H5Fopen(path("b.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(H5Ldelete(f, "summary", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  merge_results_files({path("a.h5"), path("b.h5")}, path("m.h5"));
  const std::vector<std::string> ids = summary_strings(path("m.h5"), "id");
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(sorted(ids), group_ids(path("m.h5")));
  const std::vector<std::string> status = summary_strings(path("m.h5"), "status");
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(status[i], ids[i] == config(1).id   ? "ok"
                         : ids[i] == config(2).id ? "failed"
                                                  : "skipped");
  }
  const std::vector<double> step = summary_doubles(path("m.h5"), "step_time_s");
  EXPECT_DOUBLE_EQ(
      step[static_cast<size_t>(std::find(ids.begin(), ids.end(), config(1).id) - ids.begin())],
      0.2);
}

TEST_F(ResultsFile, MergeCombinesAndRefuses) {
  create_results_file(path("a.h5"), provenance());
  create_results_file(path("b.h5"), provenance());
  const TrainResult trained = result();
  append_config(path("a.h5"), {config(1), "ok", "", "", 1.0, nullptr, &trained, ""});
  append_config(path("b.h5"), {config(2), "failed", "boom", "", 1.0, nullptr, nullptr, ""});
  merge_results_files({path("a.h5"), path("b.h5")}, path("m.h5"));
  const ResultsSummary merged = read_results_file(path("m.h5"));
  EXPECT_EQ(merged.shard, "merged");
  {
    const hid_t f = H5Fopen(path("m.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    EXPECT_EQ(H5Aexists(f, "shard_index"), 0);  // a merged file is no shard
    EXPECT_EQ(H5Aexists(f, "shard_count"), 0);
    H5Fclose(f);
  }
  ASSERT_EQ(merged.configs.size(), 2u);
  EXPECT_EQ(merged.configs[0].status, "ok");
  EXPECT_DOUBLE_EQ(merged.configs[0].median_step_s, 0.2);
  EXPECT_EQ(merged.configs[1].reason, "boom");
  // The copied groups' dimension scales point into the merged file (every attachment of
  // the source, both ways, within the group), and the root's lists stay lists.
  expect_scales(path("m.h5"), config(1).id);
  const std::string group = "/configs/" + config(1).id;
  const std::vector<std::string> source = attachments(path("a.h5"), group);
  EXPECT_GE(source.size(), 10u);
  EXPECT_EQ(attachments(path("m.h5"), group), source);
  {
    const hid_t f = H5Fopen(path("m.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    for (const char* list : {"hosts", "merged_sources", "node_local_ranks"}) {
      const hid_t a = H5Aopen(f, list, H5P_DEFAULT);
      const hid_t space = H5Aget_space(a);
      EXPECT_EQ(H5Sget_simple_extent_npoints(space), 2) << list;
      H5Sclose(space);
      H5Aclose(a);
    }
    // node_local_ranks: int64 per rank, as written.
    const hid_t a = H5Aopen(f, "node_local_ranks", H5P_DEFAULT);
    int64_t local[2] = {-1, -1};
    EXPECT_GE(H5Aread(a, H5T_NATIVE_INT64, local), 0);
    EXPECT_EQ(local[0], 0);
    EXPECT_EQ(local[1], 0);
    H5Aclose(a);
    H5Fclose(f);
  }
  // Merging a merged file replaces its merged_sources (not a duplicate attribute).
  create_results_file(path("c.h5"), provenance());
  append_config(path("c.h5"), {config(3), "failed", "boom", "", 1.0, nullptr, nullptr, ""});
  merge_results_files({path("m.h5"), path("c.h5")}, path("mm.h5"));
  EXPECT_EQ(read_results_file(path("mm.h5")).configs.size(), 3u);
  expect_scales(path("mm.h5"), config(1).id);

  // Files of two versions: refused, naming both.
  create_results_file(path("old.h5"), provenance());
  {
    const hid_t f = H5Fopen(path("old.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attr = H5Aopen(f, "format_version", H5P_DEFAULT);
    const int64_t two = 2;
    H5Awrite(attr, H5T_NATIVE_INT64, &two);
    H5Aclose(attr);
    H5Fclose(f);
  }
  try {
    merge_results_files({path("a.h5"), path("old.h5")}, path("mixed.h5"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("version 2 but"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("mixed.h5")));

  EXPECT_THROW(merge_results_files({path("a.h5")}, path("m.h5")), Error);  // exists
  try {
    merge_results_files({path("a.h5"), path("m.h5")}, path("m2.h5"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    EXPECT_NE(std::string(e.what()).find("is in both"), std::string::npos);
  }
  std::ofstream(path("junk.h5")) << "junk";
  EXPECT_THROW(merge_results_files({path("a.h5"), path("junk.h5")}, path("m3.h5")), Error);
  EXPECT_FALSE(fs::exists(path("m2.h5")));
  EXPECT_FALSE(fs::exists(path("m3.h5")));

  // A configuration's dataset tied to a dimension scale outside its group: the copy could
  // not keep that tie, so the merge is refused (not a scale silently dropped).
  create_results_file(path("tied.h5"), provenance());
  append_config(path("tied.h5"), {config(4), "ok", "", "", 1.0, nullptr, &trained, ""});
  {
    const hid_t f = H5Fopen(path("tied.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hsize_t steps = trained.steps.size();
    const hid_t space = H5Screate_simple(1, &steps, nullptr);
    const hid_t scale =
        H5Dcreate2(f, "elsewhere", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5DSset_scale(scale, "elsewhere");
    const hid_t loss =
        H5Dopen2(f, ("/configs/" + config(4).id + "/steps/loss").c_str(), H5P_DEFAULT);
    ASSERT_GE(H5DSattach_scale(loss, scale, 0), 0);
    H5Dclose(loss);
    H5Dclose(scale);
    H5Sclose(space);
    H5Fclose(f);
  }
  try {
    merge_results_files({path("a.h5"), path("tied.h5")}, path("m4.h5"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("steps/loss has a dimension scale outside the group"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path("m4.h5")));
}

// Appends to a large file go to the journal (FILE.journal/), folded when it reaches a
// fraction of the file: the bytes written stay proportional to the bytes appended, where
// rewriting the file at each append wrote bytes quadratic in the configurations.
class Journal : public ResultsFile {
 protected:
  void SetUp() override {
    ResultsFile::SetUp();
    saved_ = append_policy();
  }
  void TearDown() override {
    set_append_policy(saved_);
    ResultsFile::TearDown();
  }
  AppendPolicy saved_;
};

TEST_F(Journal, AppendsDoNotCopyALargeFile) {
  const std::string file = path("j.h5");
  create_results_file(file, provenance());
  const TrainResult trained = result();
  set_append_policy({0, 1e9});  // every append to the journal, never folded
  const uintmax_t size = fs::file_size(file);
  std::vector<uint64_t> written;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const uint64_t before = results_bytes_written();
    append_config(file, {config(seed), "ok", "", "", 1.0, nullptr, &trained, ""});
    written.push_back(results_bytes_written() - before);
  }
  EXPECT_EQ(fs::file_size(file), size);  // the file itself untouched
  EXPECT_EQ(journal_entries(file).size(), 30u);
  EXPECT_EQ(written.back(), written.front());  // an entry's bytes, whatever the file holds
  // Readers (inspect, --resume, merge) see the journal's configurations.
  EXPECT_EQ(read_results_file(file).configs.size(), 30u);
  EXPECT_THROW(append_config(file, {config(7), "ok", "", "", 1.0, nullptr, &trained, ""}), Error);
  const std::string group = "/configs/" + config(30).id;
  std::vector<std::string> journaled;  // as its entry holds it
  for (const std::string& entry : journal_entries(file)) {
    if (journaled.empty()) journaled = attachments(entry, group);
  }
  EXPECT_GE(journaled.size(), 10u);
  EXPECT_EQ(fold_journal(file), 30);
  EXPECT_TRUE(journal_entries(file).empty());
  EXPECT_FALSE(fs::exists(file + ".journal"));
  EXPECT_EQ(group_ids(file).size(), 30u);
  EXPECT_EQ(sorted(summary_strings(file, "id")), group_ids(file));
  expect_scales(file, config(30).id);  // the folded groups keep their dimension scales
  EXPECT_EQ(attachments(file, group), journaled);
}

TEST_F(Journal, BytesWrittenGrowLinearly) {
  const std::string file = path("lin.h5");
  create_results_file(file, provenance());
  const TrainResult trained = result();
  set_append_policy({64 * 1024, 0.25});
  const uint64_t before = results_bytes_written();
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    append_config(file, {config(seed), "ok", "", "", 1.0, nullptr, &trained, ""});
  }
  fold_journal(file);
  const uint64_t written = results_bytes_written() - before;
  // Folds at geometric sizes: (1 + 1/0.25) times the file, plus the small file's rewrites
  // below 64 kB and the entries; rewriting at each append wrote about 75 times the file.
  EXPECT_LT(written, 8 * fs::file_size(file)) << written << " bytes for " << fs::file_size(file);
  EXPECT_EQ(group_ids(file).size(), 150u);
  EXPECT_EQ(sorted(summary_strings(file, "id")), group_ids(file));
}

TEST_F(Journal, AKilledFoldIsFoldedAgainWithoutDuplicates) {
  const std::string file = path("k.h5");
  create_results_file(file, provenance());
  const TrainResult trained = result();
  set_append_policy({0, 1e9});
  append_config(file, {config(1), "ok", "", "", 1.0, nullptr, &trained, ""});
  append_config(file, {config(2), "failed", "boom", "", 1.0, nullptr, nullptr, ""});
  const std::vector<std::string> entries = journal_entries(file);
  ASSERT_EQ(entries.size(), 2u);
  fs::copy_file(entries[0], path("kept.h5"));
  EXPECT_EQ(fold_journal(file), 2);
  // A fold killed after its rename, before removing its entries; and a killed entry write.
  fs::create_directories(file + ".journal");
  fs::copy_file(path("kept.h5"), entries[0]);
  std::ofstream(file + ".journal/0000000009.h5.tmp") << "partial";
  EXPECT_EQ(read_results_file(file).configs.size(), 2u);
  EXPECT_EQ(fold_journal(file), 0);
  EXPECT_EQ(summary_strings(file, "id").size(), 2u);
  EXPECT_FALSE(fs::exists(file + ".journal"));
}

TEST_F(Journal, MergeTakesAnInputsJournal) {
  create_results_file(path("a.h5"), provenance());
  create_results_file(path("b.h5"), provenance());
  const TrainResult trained = result();
  append_config(path("a.h5"), {config(1), "ok", "", "", 1.0, nullptr, &trained, ""});
  set_append_policy({0, 1e9});
  append_config(path("a.h5"), {config(2), "ok", "", "", 1.0, nullptr, &trained, ""});
  append_config(path("b.h5"), {config(3), "failed", "boom", "", 1.0, nullptr, nullptr, ""});
  merge_results_files({path("a.h5"), path("b.h5")}, path("m.h5"), false);
  EXPECT_EQ(group_ids(path("m.h5")).size(), 3u);
  EXPECT_EQ(sorted(summary_strings(path("m.h5"), "id")), group_ids(path("m.h5")));
  expect_scales(path("m.h5"), config(2).id);
  EXPECT_FALSE(journal_entries(path("a.h5")).empty());  // merge reads, never changes, inputs
}
}  // namespace
}  // namespace interplace::runs
