// A bound on how deeply a TOML text nests, checked before toml11 parses it: toml11 parses
// and destroys nested arrays, inline tables and dotted keys recursively, so a spec nested
// 100,000 levels deep (`a = [[[[...]]]]`) overflows the stack instead of being refused.
#pragma once

#include <optional>
#include <string_view>

namespace interplace::runs::sweep {

// The deepest a sweep spec or override may nest: every real spec nests at most 3 levels
// (a table, an array of arrays).
inline constexpr int kMaxTomlNesting = 32;

// The line (from 1) where `text` first nests deeper than `max_depth`: open arrays and
// inline tables plus the parts of the current dotted key and [table] header; strings and
// comments do not count. Nothing when it never does.
std::optional<int> line_nested_too_deep(std::string_view text, int max_depth = kMaxTomlNesting);

}  // namespace interplace::runs::sweep
