// data/pytorch-schedule-orders.txt, read once per test that compares with PyTorch's
// schedules: "<schedule> K<k> M<m> V<v> rank<r>" -> PyTorch's per-rank order (the file's
// header names the torch version and the command that made it).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

namespace interplace::placement::testing {

inline std::map<std::string, std::string> pytorch_orders() {
  std::ifstream in(std::string(INTERPLACE_PLACEMENT_TEST_DATA) + "/pytorch-schedule-orders.txt");
  EXPECT_TRUE(in.good()) << "cannot read " INTERPLACE_PLACEMENT_TEST_DATA;
  std::map<std::string, std::string> orders;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(": ");
    if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
    orders[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return orders;
}

}  // namespace interplace::placement::testing
