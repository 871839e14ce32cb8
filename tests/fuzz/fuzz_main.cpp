// Seeded mutation runs of the fuzz targets (fuzz_targets.hpp), deterministic for a seed:
//
//   fuzz_driver TARGET [--corpus PATH]... [--runs N] [--seed S] [--save DIR]
//   fuzz_driver TARGET --replay FILE...      one input per file, as a finding is saved
//
// Each run takes a corpus input (files or folders given, plus inputs the driver makes for
// placement and policy) and changes it: for text, 1-8 byte-level edits (bit flips,
// TOML/TSV tokens, deep nesting, huge and non-finite numbers, deletions, duplications,
// splices, truncation); for HDF5 result files, edits through HDF5 itself (attributes
// deleted or retyped, datasets and groups deleted or reshaped) or truncation, since random
// bytes in an HDF5 file test libhdf5 rather than our reader. An input that ends in anything
// but success or interplace::Error (another exception, a crash, a sanitizer report, more
// than 10 s) is a finding: it is saved to --save (default: the working folder) and the
// driver exits 1. Prints the runs, the clear errors and the successes.
#include <hdf5.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"
#include "interplace/kernels/error.hpp"
#include "interplace/placement/placement_file.hpp"
#include "interplace/placement/rl_placer.hpp"
#include "interplace/placement/zoo.hpp"

namespace fs = std::filesystem;
using interplace::fuzz::Target;

namespace {

constexpr unsigned kHangSeconds = 10;
constexpr size_t kMaxBytes = size_t{1} << 20;
std::string current_input_path;  // where the input being run is saved when it hangs

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const fs::path& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void on_hang(int) {
  const char message[] = "fuzz: FINDING: an input ran for more than 10 s (a hang); saved as ";
  [[maybe_unused]] auto n = ::write(2, message, sizeof message - 1);
  n = ::write(2, current_input_path.data(), current_input_path.size());
  n = ::write(2, "\n", 1);
  ::_exit(1);
}

// Runs one input: 0 read, 1 clear error, and a finding ends the process.
int run_one(const Target& target, const std::string& bytes, const fs::path& save_as) {
  current_input_path = save_as.string();
  write_bytes(save_as, bytes);  // before running: a crash leaves it behind
  ::alarm(kHangSeconds);
  int outcome = 0;
  try {
    target.run(bytes);
  } catch (const interplace::Error&) {
    outcome = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: FINDING: %s: an exception that is no clear error (%s): %s\n",
                 target.name, typeid(e).name(), e.what());
    std::fprintf(stderr, "fuzz: input saved as %s\n", save_as.c_str());
    std::exit(1);
  }
  ::alarm(0);
  fs::remove(save_as);
  return outcome;
}

// Byte-level edits for the text formats.
class TextMutator {
 public:
  explicit TextMutator(uint64_t seed) : rng_(seed) {}

  std::string mutate(std::string s, const std::vector<std::string>& corpus) {
    const size_t edits = 1 + pick(8);
    for (size_t i = 0; i < edits; ++i) edit(s, corpus);
    if (s.size() > kMaxBytes) s.resize(kMaxBytes);
    return s;
  }

 private:
  size_t pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  void edit(std::string& s, const std::vector<std::string>& corpus) {
    static const std::vector<std::string> tokens = {"[",
                                                    "]",
                                                    "{",
                                                    "}",
                                                    "=",
                                                    "\"",
                                                    "'",
                                                    "\"\"\"",
                                                    "#",
                                                    ".",
                                                    ",",
                                                    "\n",
                                                    "\t",
                                                    "-",
                                                    "0",
                                                    "-1",
                                                    "1e309",
                                                    "-1e309",
                                                    "nan",
                                                    "inf",
                                                    "-inf",
                                                    "1e-320",
                                                    "18446744073709551616",
                                                    "-9223372036854775808",
                                                    "2147483648",
                                                    "4294967296",
                                                    "0x7fffffff",
                                                    "true",
                                                    "\\u0000",
                                                    "\\",
                                                    " = ",
                                                    "[[exclude]]",
                                                    "[model_options]",
                                                    "models",
                                                    "devices",
                                                    "steps",
                                                    "batch_size",
                                                    "micro_batches",
                                                    "node",
                                                    "devices 2",
                                                    "nodes 1",
                                                    "parameters 1",
                                                    "hidden 1",
                                                    "runtime_forward_s",
                                                    "format",
                                                    "interplace-profile 1",
                                                    std::string(1, '\0'),
                                                    std::string(1, '\xff')};
    const size_t at = pick(s.size() + 1);
    switch (pick(9)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // replace a byte by a token's first byte
        if (!s.empty()) s[pick(s.size())] = tokens[pick(tokens.size())].front();
        break;
      case 2:
      case 3:  // insert a token
        s.insert(at, tokens[pick(tokens.size())]);
        break;
      case 4:  // a long run of one token: nesting, long lines, long names
        s.insert(at, repeat(tokens[pick(tokens.size())], 1 + pick(20000)));
        break;
      case 5:  // delete a range
        s.erase(at, pick(64));
        break;
      case 6:  // duplicate a range
        if (!s.empty()) {
          const size_t from = pick(s.size());
          s.insert(at, s.substr(from, 1 + pick(256)));
        }
        break;
      case 7: {  // splice a piece of another input
        const std::string& other = corpus[pick(corpus.size())];
        if (!other.empty()) s.insert(at, other.substr(pick(other.size()), 1 + pick(512)));
        break;
      }
      default:  // truncate
        s.resize(at);
        break;
    }
  }

  static std::string repeat(const std::string& token, size_t times) {
    std::string out;
    out.reserve(token.size() * times);
    for (size_t i = 0; i < times && out.size() < kMaxBytes / 2; ++i) out += token;
    return out;
  }

  std::mt19937_64 rng_;
};

// Edits of an HDF5 result file through HDF5: the file stays readable by the library, its
// content becomes what our reader must refuse clearly.
class ResultsMutator {
 public:
  explicit ResultsMutator(uint64_t seed) : rng_(seed) {}

  std::string mutate(const std::string& seed_bytes, const fs::path& scratch) {
    write_bytes(scratch, seed_bytes);
    if (pick(8) == 0) {  // truncation: what a full disk or a killed copy leaves
      std::string bytes = seed_bytes;
      bytes.resize(pick(bytes.size()));
      return bytes;
    }
    const hid_t file = H5Fopen(scratch.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    if (file < 0) return seed_bytes;
    std::vector<std::string> objects;
    H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_object, &objects);
    const int edits = 1 + static_cast<int>(pick(3));
    for (int i = 0; i < edits && !objects.empty(); ++i) edit(file, objects);
    H5Fclose(file);
    return read_bytes(scratch);
  }

 private:
  size_t pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  static herr_t collect_object(hid_t, const char* name, const H5O_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  }
  static herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  }

  void edit(hid_t file, std::vector<std::string>& objects) {
    const std::string object = objects[pick(objects.size())];
    std::vector<std::string> attributes;
    H5Aiterate_by_name(file, object.c_str(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attribute,
                       &attributes, H5P_DEFAULT);
    const size_t kind = pick(4);
    if (kind <= 1 && !attributes.empty()) {
      const std::string attribute = attributes[pick(attributes.size())];
      H5Adelete_by_name(file, object.c_str(), attribute.c_str(), H5P_DEFAULT);
      if (kind == 1) write_random_attribute(file, object, attribute);  // retyped
    } else if (kind == 2 && object != ".") {
      H5Ldelete(file, object.c_str(), H5P_DEFAULT);
      std::erase_if(objects, [&](const std::string& o) { return o.starts_with(object); });
    } else if (object != ".") {  // a dataset or group replaced by a dataset of another shape
      H5Ldelete(file, object.c_str(), H5P_DEFAULT);
      std::erase_if(objects, [&](const std::string& o) { return o.starts_with(object); });
      write_random_dataset(file, object);
    }
  }

  void write_random_attribute(hid_t file, const std::string& object, const std::string& name) {
    static const int64_t ints[] = {-1, 0, 1, 3, int64_t{1} << 40, INT64_MIN, INT64_MAX};
    static const double doubles[] = {-1.0, 0.0, 1e308, -1e-308, NAN, INFINITY};
    static const char* strings[] = {"",    "x",   "nan", "-1",
                                    "1/0", "0/0", "3/2", "interplace-results"};
    const hid_t space = H5Screate(H5S_SCALAR);
    hid_t type = -1;
    const void* value = nullptr;
    const char* text = nullptr;
    switch (pick(3)) {
      case 0:
        type = H5Tcopy(H5T_STD_I64LE);
        value = &ints[pick(std::size(ints))];
        break;
      case 1:
        type = H5Tcopy(H5T_IEEE_F64LE);
        value = &doubles[pick(std::size(doubles))];
        break;
      default:
        type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, H5T_VARIABLE);
        text = strings[pick(std::size(strings))];
        value = &text;
        break;
    }
    const hid_t attribute = H5Acreate_by_name(file, object.c_str(), name.c_str(), type, space,
                                              H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (attribute >= 0) {
      H5Awrite(attribute, type, value);
      H5Aclose(attribute);
    }
    H5Tclose(type);
    H5Sclose(space);
  }

  void write_random_dataset(hid_t file, const std::string& path) {
    const hsize_t dims[2] = {pick(5), 1 + pick(3)};
    const int rank = 1 + static_cast<int>(pick(2));
    const hid_t space = H5Screate_simple(rank, dims, nullptr);
    std::vector<double> values(dims[0] * dims[1], -1.0);
    const hid_t set = H5Dcreate2(file, path.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT,
                                 H5P_DEFAULT, H5P_DEFAULT);
    if (set >= 0) {
      if (!values.empty()) {
        H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
      }
      H5Dclose(set);
    }
    H5Sclose(space);
  }

  std::mt19937_64 rng_;
};

// Inputs the driver makes itself, in the formats' writers: a placement of resnet20's graph
// on 2 devices and a small rl policy.
std::vector<std::string> made_inputs(const std::string& target, const fs::path& scratch) {
  if (target == "placement") {
    const auto graph = interplace::placement::build_model("resnet20", {});
    interplace::placement::Placement p{2,
                                       std::vector<int>(static_cast<size_t>(graph.node_count()))};
    for (size_t i = 0; i < p.device_of_node.size(); ++i)
      p.device_of_node[i] = i * 2 < p.device_of_node.size() ? 0 : 1;
    interplace::placement::write_placement_file(scratch.string(), graph, p);
    return {read_bytes(scratch)};
  }
  if (target == "policy") {
    // Version 2 (with candidate features), whose reader path includes version 1's.
    interplace::placement::RlSavedPolicy policy{
        .rounds = 2, .inputs = 3, .hidden = 4, .devices = 2, .candidates = 1, .parameters = {}};
    for (int i = 0; i < 4 * 3 + 4 + 2 * 4 + 2 + 1; ++i) {
      policy.parameters.push_back(0.125 * i - 1.0);
    }
    interplace::placement::write_rl_policy(scratch.string(), policy);
    return {read_bytes(scratch)};
  }
  if (target == "override") {
    return {"steps=3",
            "devices=[1, 2]",
            "model_options.width_multiplier=0.5",
            "models=resnet20,gpt-mini",
            "learning_rate=1e-3",
            "placers=[\"contiguous\"]",
            "model_options.gpt-mini.layers=2",
            "exclude=1"};
  }
  return {};
}

int usage() {
  std::fprintf(stderr,
               "usage: fuzz_driver TARGET [--corpus PATH]... [--runs N] [--seed S] [--save DIR]\n"
               "       fuzz_driver TARGET --replay FILE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const Target& target = interplace::fuzz::target(argv[1]);
  std::vector<fs::path> corpus_paths, replay;
  long runs = 1000;
  uint64_t seed = 1;
  fs::path save = fs::current_path();
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--corpus" && has_value) {
      corpus_paths.emplace_back(argv[++i]);
    } else if (arg == "--runs" && has_value) {
      runs = std::stol(argv[++i]);
    } else if (arg == "--seed" && has_value) {
      seed = std::stoull(argv[++i]);
    } else if (arg == "--save" && has_value) {
      save = argv[++i];
    } else if (arg == "--replay") {
      for (; i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--"); ++i) {
        replay.emplace_back(argv[i + 1]);
      }
      if (replay.empty()) return usage();
    } else {
      return usage();
    }
  }
  ::signal(SIGALRM, on_hang);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // the mutator's own failed edits are expected
  const fs::path finding = save / (std::string("fuzz-finding-") + target.name);
  const fs::path scratch = save / (std::string("fuzz-scratch-") + target.name);
  if (!replay.empty()) {
    for (const fs::path& file : replay) {
      const int outcome = run_one(target, read_bytes(file), finding);
      std::printf("%s: %s\n", file.c_str(), outcome == 0 ? "read" : "clear error");
    }
    return 0;
  }
  std::vector<std::string> corpus = made_inputs(target.name, scratch);
  for (const fs::path& path : corpus_paths) {
    if (fs::is_directory(path)) {
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_regular_file()) corpus.push_back(read_bytes(entry.path()));
      }
    } else {
      corpus.push_back(read_bytes(path));
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "fuzz: %s: no corpus (give --corpus)\n", target.name);
    return 2;
  }
  long read = 0, refused = 0;
  for (const std::string& input : corpus) {  // the corpus itself must read
    if (run_one(target, input, finding) != 0 && std::string(target.name) != "override") {
      std::fprintf(stderr, "fuzz: %s: a corpus input is refused; is the corpus current?\n",
                   target.name);
      return 1;
    }
  }
  std::mt19937_64 choose(seed);
  TextMutator text(seed);
  ResultsMutator results(seed);
  const bool hdf5 = std::string(target.name) == "results";
  for (long run = 0; run < runs; ++run) {
    const std::string& base = corpus[choose() % corpus.size()];
    const std::string input = hdf5 ? results.mutate(base, scratch) : text.mutate(base, corpus);
    (run_one(target, input, finding) == 0 ? read : refused) += 1;
  }
  fs::remove(scratch);
  std::printf(
      "fuzz %s: %ld runs (seed %llu) from %zu corpus inputs: %ld read, %ld clear errors, "
      "no finding\n",
      target.name, runs, static_cast<unsigned long long>(seed), corpus.size(), read, refused);
  return 0;
}
