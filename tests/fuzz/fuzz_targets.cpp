#include "fuzz_targets.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "interplace/placement/graph_file.hpp"
#include "interplace/placement/placement_file.hpp"
#include "interplace/placement/profile.hpp"
#include "interplace/placement/rl_placer.hpp"
#include "interplace/placement/zoo.hpp"
#include "interplace/runs/results_file.hpp"
#include "interplace/runs/sweep_spec.hpp"

namespace interplace::fuzz {
namespace {

// The readers that take a path get the bytes through a file of this process's own.
class ScratchFile {
 public:
  explicit ScratchFile(std::string_view bytes) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = (std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
             ("interplace-fuzz-" + std::to_string(::getpid())))
                .string();
    std::ofstream(path_, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void spec(std::string_view bytes) {
  runs::parse_sweep_spec(std::string(bytes), "fuzz.toml");
}

void override_value(std::string_view bytes) {
  runs::parse_sweep_spec("models = [\"resnet20\"]\nsteps = 2\n", "fuzz.toml", {std::string(bytes)});
}

void profile(std::string_view bytes) {
  std::istringstream in{std::string(bytes)};
  placement::read_profile(in, "fuzz.tsv");
}

void placement_file(std::string_view bytes) {
  static const placement::Graph graph = placement::build_model("resnet20", {});
  const ScratchFile file(bytes);
  placement::read_placement_file(file.path(), graph);
}

void policy(std::string_view bytes) {
  const ScratchFile file(bytes);
  placement::read_rl_policy(file.path());
}

// A graph file (docs/your-network.md); one that reads is also rebuilt at another batch size.
void graph(std::string_view bytes) {
  const placement::GraphFile file = placement::parse_graph_file(bytes, "fuzz.json");
  placement::rebatch_graph(file.graph, 3);
  placement::opaque_summary(file.graph);
}

void results(std::string_view bytes) {
  const ScratchFile file(bytes);
  runs::read_results_file(file.path());
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"spec", spec},       {"override", override_value},
                                          {"profile", profile}, {"placement", placement_file},
                                          {"policy", policy},   {"results", results},
                                          {"graph", graph}};
  return all;
}

const Target& target(const std::string& name) {
  std::string valid;
  for (const Target& t : targets()) {
    if (name == t.name) return t;
    valid += (valid.empty() ? "" : ", ") + std::string(t.name);
  }
  std::fprintf(stderr, "fuzz: unknown target '%s' (valid: %s)\n", name.c_str(), valid.c_str());
  std::exit(2);
}

}  // namespace interplace::fuzz
