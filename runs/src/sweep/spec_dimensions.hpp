// The dimensions of a sweep spec: their TOML keys, how a value is checked and how it is
// set on a TrainConfig. Their order here is the expansion order (first = outermost).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "interplace/runs/training.hpp"

namespace interplace::runs::sweep {

enum class ValueKind { string, integer, number };

// One checked value: `text` is its canonical form (what exclusions compare).
struct DimValue {
  std::string text;
  int64_t integer = 0;
  double number = 0.0;
};

struct Dimension {
  std::string key;     // singular, as the result attribute: "order"
  std::string plural;  // accepted alias: "orders" (empty: none)
  ValueKind kind = ValueKind::string;
  std::vector<std::string> defaults;  // canonical texts used when the spec omits the key
  // Throws invalid_input with the reason (no location: the parser adds it).
  std::function<void(const DimValue&)> check;
  std::function<void(TrainConfig&, const DimValue&)> apply;
};

const std::vector<Dimension>& dimensions();

// Shortest text that reads back to the same double.
std::string number_text(double value);

}  // namespace interplace::runs::sweep
