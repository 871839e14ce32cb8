#include "text_format.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace interplace::runs::cli {
namespace {

// Three significant digits: "1.23", "12.3", "123".
std::string three_digits(double value) {
  const double magnitude = std::fabs(value);
  const int decimals = magnitude >= 100.0 ? 0 : magnitude >= 10.0 ? 1 : 2;
  return format_fixed(value, decimals);
}

}  // namespace

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? separator : "") + items[i];
  return out;
}

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string plural(int64_t count, const std::string& singular, const std::string& plural_form) {
  return std::to_string(count) + " " + (count == 1 ? singular : plural_form);
}

std::string format_count(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "inf";
  const double magnitude = std::fabs(seconds);
  if (magnitude == 0.0) return "0 s";
  if (magnitude < 1e-6) return three_digits(seconds * 1e9) + " ns";
  if (magnitude < 1e-3) return three_digits(seconds * 1e6) + " us";
  if (magnitude < 1.0) return three_digits(seconds * 1e3) + " ms";
  return three_digits(seconds) + " s";
}

std::string format_duration(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (!std::isfinite(seconds) || magnitude < 100.0) return format_seconds(seconds);
  if (magnitude < 100.0 * 60.0) return three_digits(seconds / 60.0) + " min";
  if (magnitude < 48.0 * 3600.0) return three_digits(seconds / 3600.0) + " h";
  return three_digits(seconds / 86400.0) + " d";
}

std::string format_scaled(double value, const std::string& unit) {
  if (!std::isfinite(value)) return "inf " + unit;
  static constexpr std::array<const char*, 6> kPrefixes = {"", "k", "M", "G", "T", "P"};
  size_t prefix = 0;
  while (prefix + 1 < kPrefixes.size() && std::fabs(value) >= 999.5) {
    value /= 1000.0;
    ++prefix;
  }
  return (prefix == 0 && value == std::floor(value) ? format_fixed(value, 0)
                                                    : three_digits(value)) +
         " " + kPrefixes[prefix] + unit;
}

std::string format_bytes(double bytes) {
  return format_scaled(bytes, "B");
}

std::string format_percent(double fraction) {
  return format_fixed(fraction * 100.0, 1) + "%";
}

TextTable::TextTable(std::vector<std::string> header, std::vector<size_t> left_aligned)
    : left_aligned_(std::move(left_aligned)) {
  left_aligned_.push_back(0);
  if (!header.empty()) rows_.push_back(std::move(header));
}

void TextTable::add_row(std::vector<std::string> row) {
  rows_.push_back(std::move(row));
}

std::string TextTable::str() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      const bool left =
          std::find(left_aligned_.begin(), left_aligned_.end(), c) != left_aligned_.end();
      line += left ? row[c] + pad : pad + row[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace interplace::runs::cli
