#include "interplace/kernels/input_file.hpp"

#include <system_error>

#include "interplace/kernels/error.hpp"

namespace interplace {

int64_t check_input_file(const std::filesystem::path& path, const std::string& what,
                         int64_t max_bytes) {
  const std::string where = what + " '" + path.string() + "': ";
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) {
    throw_invalid(where + "no such file" + (error ? " (" + error.message() + ")" : ""));
  }
  if (std::filesystem::is_directory(status)) throw_invalid(where + "is a directory, not a file");
  if (!std::filesystem::is_regular_file(status)) {
    throw_invalid(where +
                  "is not a regular file (a device, FIFO or socket cannot be read "
                  "as input)");
  }
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, error));
  if (error) throw_invalid(where + "cannot read its size (" + error.message() + ")");
  if (size > max_bytes) {
    throw_invalid(where + "is " + std::to_string(size) + " bytes, more than the " +
                  std::to_string(max_bytes) + " such a file can sensibly be");
  }
  return size;
}

}  // namespace interplace
