#include "toml_nesting.hpp"

#include <vector>

namespace interplace::runs::sweep {
namespace {

// One open array or inline table, or the document itself (kind 0).
struct Frame {
  char kind = 0;       // 0, '[' or '{'
  int key_parts = 0;   // dots of the key being read or whose value is being read
  bool at_key = true;  // the next bare word is a key (document, inline table) or a value
};

}  // namespace

std::optional<int> line_nested_too_deep(std::string_view text, int max_depth) {
  int line = 1;
  int header_parts = 0;  // the dots of the last [table] header: its keys nest below it
  bool in_header = false;
  std::vector<Frame> frames(1);
  int depth = 0;  // open frames + every frame's key parts + header parts
  // Skips the string that starts at text[i] (a quote), counting its lines; returns the
  // index of its last character. An unterminated string ends the scan (toml11 reports it).
  auto skip_string = [&](size_t i) {
    const char quote = text[i];
    const std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
    const bool multi = text.substr(i, 3) == triple;
    for (size_t j = i + (multi ? 3 : 1); j < text.size(); ++j) {
      if (text[j] == '\n') {
        ++line;
        if (!multi) return j - 1;  // a one-line string ends here (a syntax error for toml11)
      } else if (text[j] == '\\' && quote == '"') {
        if (j + 1 < text.size() && text[j + 1] == '\n') ++line;
        ++j;  // the escaped character, \" and \\ included
      } else if (text[j] == quote && (!multi || text.substr(j, 3) == triple)) {
        return multi ? j + 2 : j;
      }
    }
    return text.size();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    Frame& top = frames.back();
    switch (text[i]) {
      case '\n':
        ++line;
        if (frames.size() == 1) {  // a new line of the document: a new key or header
          depth -= top.key_parts;
          top = Frame{};
          in_header = false;
        }
        break;
      case '#':
        while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        break;
      case '"':
      case '\'':
        i = skip_string(i);
        break;
      case '[':
        if (frames.size() == 1 && top.at_key) {  // [table] or [[array of tables]]
          if (!in_header) depth -= header_parts;
          header_parts = 0;
          in_header = true;
          break;
        }
        frames.push_back(Frame{'[', 0, false});
        ++depth;
        break;
      case '{':
        frames.push_back(Frame{'{', 0, true});
        ++depth;
        break;
      case ']':
      case '}':
        if (frames.size() > 1) {
          depth -= 1 + top.key_parts;
          frames.pop_back();
        }
        break;
      case '.':
        if (in_header) {
          ++header_parts;
          ++depth;
        } else if (top.at_key) {
          ++top.key_parts;
          ++depth;
        }
        break;
      case '=':
        top.at_key = false;
        break;
      case ',':
        if (top.kind == '{') {  // the next key of an inline table
          depth -= top.key_parts;
          top.key_parts = 0;
          top.at_key = true;
        }
        break;
      default:
        break;
    }
    if (depth > max_depth) return line;
  }
  return std::nullopt;
}

}  // namespace interplace::runs::sweep
