// Writing the CLI's --format json output by hand: one object at a time, keys in the order
// they are added, numbers that read back exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace interplace::runs::cli {

// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);
// Shortest text that reads back to the same double; "null" for inf and NaN, which JSON
// cannot hold (an infinite link bandwidth, for instance).
std::string json_number(double value);

template <typename T, typename Format>
std::string json_array(const std::vector<T>& values, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += format(values[i]);
  }
  return out + "]";
}

class JsonObject {
 public:
  JsonObject& string(std::string_view key, std::string_view value);
  JsonObject& number(std::string_view key, double value);
  JsonObject& integer(std::string_view key, int64_t value);
  JsonObject& unsigned_integer(std::string_view key, uint64_t value);
  JsonObject& boolean(std::string_view key, bool value);
  JsonObject& null(std::string_view key);
  // `json` must already be valid JSON text (an object, array or literal).
  JsonObject& raw(std::string_view key, std::string_view json);
  std::string str() const { return text_ + "}"; }

 private:
  JsonObject& key(std::string_view key);
  std::string text_ = "{";
};

}  // namespace interplace::runs::cli
