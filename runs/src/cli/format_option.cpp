#include <algorithm>

#include "commands.hpp"
#include "interplace/kernels/error.hpp"
#include "text_format.hpp"

namespace interplace::runs::cli {
void add_format_option(CLI::App& app, std::string& format, const std::vector<std::string>& valid) {
  format = valid.front();
  app.add_option("--format", format, "output format: " + join(valid))->capture_default_str();
}

void require_format(const std::string& format, const std::vector<std::string>& valid) {
  if (std::find(valid.begin(), valid.end(), format) == valid.end()) {
    throw_invalid("unknown format '" + format + "' (valid: " + join(valid) + ")");
  }
}

void set_example(CLI::App& app, const std::string& command) {
  app.footer("\nExample:\n  " + command);
}

}  // namespace interplace::runs::cli
