// Small helpers for writing JSON by hand: string escaping and round-trip number text.
#pragma once

#include <string>
#include <string_view>

namespace interplace::placement::detail {

// `text` as a JSON string literal, quotes included; control characters become \uXXXX.
std::string json_quote(std::string_view text);
// Shortest text that reads back to the same double; throws for non-finite values.
std::string json_number(double value);

}  // namespace interplace::placement::detail
