#include "json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace interplace::runs::cli {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

JsonObject& JsonObject::key(std::string_view name) {
  if (text_.size() > 1) text_ += ", ";
  text_ += json_string(name);
  text_ += ": ";
  return *this;
}

JsonObject& JsonObject::string(std::string_view name, std::string_view value) {
  key(name).text_ += json_string(value);
  return *this;
}

JsonObject& JsonObject::number(std::string_view name, double value) {
  key(name).text_ += json_number(value);
  return *this;
}

JsonObject& JsonObject::integer(std::string_view name, int64_t value) {
  key(name).text_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::unsigned_integer(std::string_view name, uint64_t value) {
  key(name).text_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::boolean(std::string_view name, bool value) {
  key(name).text_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::null(std::string_view name) {
  key(name).text_ += "null";
  return *this;
}

JsonObject& JsonObject::raw(std::string_view name, std::string_view json) {
  key(name).text_ += json;
  return *this;
}

}  // namespace interplace::runs::cli
