// The suite's input readers as fuzz targets: each takes one input's bytes and either reads
// it or throws interplace::Error (a clear error). Anything else (another exception type, a
// crash, a sanitizer report, a hang) is a finding. Driven by fuzz_main.cpp: seeded mutation
// runs under CTest in every build, under ASan and UBSan in `make sanitize`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace interplace::fuzz {

struct Target {
  const char* name;
  void (*run)(std::string_view bytes);
};

// spec (a sweep spec, TOML), override (one key=value of the command line), profile,
// placement (a placement file for resnet20's graph), policy (an rl policy file), results
// (an HDF5 result file: the bytes are written to a file and read as `interplace inspect`
// and --resume do), graph (a graph file, then rebuilt at another batch size).
const std::vector<Target>& targets();
const Target& target(const std::string& name);  // exits 2 naming the valid ones

}  // namespace interplace::fuzz
