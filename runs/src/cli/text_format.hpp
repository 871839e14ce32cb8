// Human-readable numbers and aligned tables for the CLI's --format text output. Units are
// decimal (1 MB = 1e6 bytes), as for --memory-gb.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace interplace::runs::cli {

// "a, b, c": the valid choices in error messages and help texts.
std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");

std::string format_count(int64_t value);
// "1 device", "4 devices"; "1 micro-batch", "8 micro-batches".
std::string plural(int64_t count, const std::string& singular,
                   const std::string& plural_form);  // 272186 -> "272,186"
std::string format_seconds(double seconds);          // 0.00123 -> "1.23 ms"
// Spans of minutes to days: 5400 -> "90.0 min", 86400 -> "24.0 h", 4.4e6 -> "50.7 d";
// below 100 s as format_seconds.
std::string format_duration(double seconds);
std::string format_bytes(double bytes);                            // 1.5e9 -> "1.50 GB"
std::string format_scaled(double value, const std::string& unit);  // 4.1e7, "FLOP" -> "41.0 MFLOP"
std::string format_percent(double fraction);                       // 0.4123 -> "41.2%"
std::string format_fixed(double value, int decimals);
std::string format_number(double value);  // shortest exact text; "inf", "nan"

// Columns right-aligned (they hold numbers) except the first and those named in
// `left_aligned` (column indices). An empty header prints no header line.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header, std::vector<size_t> left_aligned = {});
  void add_row(std::vector<std::string> row);
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> left_aligned_;
};

}  // namespace interplace::runs::cli
