#include "hdf5_io.hpp"

#include <hdf5_hl.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "interplace/kernels/error.hpp"

namespace interplace::runs::h5 {
namespace {

Handle utf8_string_type() {
  Handle type = check(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset");
  return type;
}

Handle scalar_space() {
  return check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
}

Handle simple_space(size_t rows, size_t cols) {
  const hsize_t dims[2] = {rows, cols};
  return check(H5Screate_simple(cols == 0 ? 1 : 2, dims, nullptr), H5Sclose, "H5Screate_simple");
}

void write_scalar(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                  const void* value) {
  const Handle space = scalar_space();
  const Handle attr =
      check(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, "creating attribute " + name);
  check(H5Awrite(attr.get(), memory_type, value), "writing attribute " + name);
}

std::optional<Handle> open_attr(hid_t object, const std::string& name) {
  if (H5Aexists(object, name.c_str()) <= 0) return std::nullopt;
  return check(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, "opening attribute " + name);
}

// Long one-axis numeric datasets (a large graph's per-node order and placement, long step
// series) are stored in one chunk with the shuffle and deflate filters, which every HDF5
// reader (h5py, xarray, h5dump) undoes transparently: a simulate-only study of 3,500-node
// graphs writes a tenth of the bytes. Shorter ones, and strings, are stored contiguously.
constexpr size_t kCompressedRows = 512;

Handle dataset_creation(hid_t file_type, size_t rows, size_t cols) {
  Handle plist = check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  if (cols != 0 || rows < kCompressedRows || H5Tget_class(file_type) == H5T_STRING ||
      H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) {
    return plist;
  }
  const hsize_t chunk[1] = {static_cast<hsize_t>(rows)};
  check(H5Pset_chunk(plist.get(), 1, chunk), "H5Pset_chunk");
  check(H5Pset_shuffle(plist.get()), "H5Pset_shuffle");
  check(H5Pset_deflate(plist.get(), 4), "H5Pset_deflate");
  return plist;
}

Handle write_raw(hid_t parent, const std::string& name, hid_t file_type, hid_t memory_type,
                 const void* data, size_t rows, size_t cols) {
  const Handle space = simple_space(rows, cols);
  const Handle creation = dataset_creation(file_type, rows, cols);
  Handle set = check(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                creation.get(), H5P_DEFAULT),
                     H5Dclose, "creating dataset " + name);
  if (rows == 0) return set;  // an empty shape: nothing to write
  check(H5Dwrite(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
        "writing dataset " + name);
  return set;
}

template <typename T>
std::vector<T> read_raw(hid_t parent, const std::string& name, hid_t memory_type) {
  const Handle set =
      check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, "opening dataset " + name);
  const Handle space = check(H5Dget_space(set.get()), H5Sclose, "H5Dget_space");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_runtime("cannot read the shape of dataset " + name);
  std::vector<T> out(static_cast<size_t>(count));
  if (count > 0) {
    check(H5Dread(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()),
          "reading dataset " + name);
  }
  return out;
}

herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

void quiet() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    close();
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
    closer_ = other.closer_;
  }
  return *this;
}

herr_t Handle::close() {
  herr_t status = 0;
  if (id_ >= 0 && closer_ != nullptr) status = closer_(id_);
  id_ = H5I_INVALID_HID;
  return status;
}

Handle check(hid_t id, Handle::Closer closer, const std::string& what) {
  if (id < 0) throw_runtime("HDF5: " + what + " failed");
  return Handle(id, closer);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) throw_runtime("HDF5: " + what + " failed");
}

namespace {
// Closing a file closes everything still open in it, so that close means flushed.
Handle strong_close_access() {
  Handle fapl = check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "H5Pset_fclose_degree");
  return fapl;
}
}  // namespace

Handle open_file(const std::string& path, bool writable) {
  quiet();
  const Handle fapl = strong_close_access();
  return check(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()),
               H5Fclose, "opening " + path);
}

namespace {

// The core driver in memory only; each extension of the image grows it by 1 MiB.
Handle memory_access() {
  Handle fapl = strong_close_access();
  check(H5Pset_fapl_core(fapl.get(), size_t{1} << 20, false), "H5Pset_fapl_core");
  return fapl;
}

// A name no file can have (below /dev/null), distinct per file: HDF5 1.10's core driver
// refuses an image opened under the name of a file on disk ("file already exists"), and
// HDF5 takes two open files of one name for the same file.
std::string memory_name() {
  static int count = 0;
  return "/dev/null/interplace-in-memory-" + std::to_string(++count) + ".h5";
}

uint64_t saved_bytes = 0;

std::string errno_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// The whole of `bytes` into `path`, flushed to the disk; errno on failure (0: written).
int write_whole_file(const std::string& path, const std::vector<char>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t done = 0;
  int error = 0;
  while (done < bytes.size() && error == 0) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      error = errno;
    }
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  return error;
}

}  // namespace

uint64_t MemoryFile::bytes_saved() {
  return saved_bytes;
}

MemoryFile MemoryFile::create() {
  quiet();
  const Handle fapl = memory_access();
  return MemoryFile(check(H5Fcreate(memory_name().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                          H5Fclose, "creating an HDF5 file in memory"));
}

MemoryFile MemoryFile::load(const std::string& path) {
  quiet();
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw_runtime("cannot read " + path + ": " + error.message());
  std::vector<char> bytes(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())) || bytes.empty()) {
    throw_runtime("cannot read " + path);
  }
  const Handle fapl = memory_access();
  // HDF5 copies the image: `bytes` may go once the file is open.
  check(H5Pset_file_image(fapl.get(), bytes.data(), bytes.size()), "H5Pset_file_image");
  return MemoryFile(check(H5Fopen(memory_name().c_str(), H5F_ACC_RDWR, fapl.get()), H5Fclose,
                          "opening a copy of " + path + " in memory"));
}

void MemoryFile::save(const std::string& path) {
  check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flushing " + path + " in memory");
  const ssize_t size = H5Fget_file_image(file_.get(), nullptr, 0);
  if (size <= 0) throw_runtime("HDF5: the image of " + path + " is empty");
  std::vector<char> bytes(static_cast<size_t>(size));
  if (H5Fget_file_image(file_.get(), bytes.data(), bytes.size()) != size) {
    throw_runtime("HDF5: copying the image of " + path + " failed");
  }
  const std::string tmp = path + ".tmp";
  if (const int error = write_whole_file(tmp, bytes)) {
    ::unlink(tmp.c_str());  // a partial file would only hold the space
    throw_runtime("cannot write " + path + ": " + errno_text(error) + " (writing " +
                  std::to_string(bytes.size()) + " bytes to " + tmp + ")");
  }
  saved_bytes += bytes.size();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw_runtime("cannot write " + path + ": renaming " + tmp +
                  " over it failed: " + errno_text(error));
  }
}

namespace {

// Reserves `bytes` on the disk beyond the end of the open file `fd` (the file's size
// unchanged), so that writing them later cannot fail for want of space; where the file
// system cannot reserve, checks that it has them free. Returns errno (0: reserved).
int reserve_space(int fd, uint64_t bytes) {
  if (bytes == 0) return 0;
  struct stat info {};
  if (::fstat(fd, &info) != 0) return errno;
  if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, info.st_size, static_cast<off_t>(bytes)) == 0) return 0;
  if (errno != EOPNOTSUPP && errno != ENOSYS) return errno;
  struct statvfs space {};
  if (::fstatvfs(fd, &space) != 0) return errno;
  const uint64_t free_bytes = static_cast<uint64_t>(space.f_bavail) * space.f_frsize;
  return free_bytes < bytes ? ENOSPC : 0;
}

[[noreturn]] void fail_to_write(const std::string& path, int error, const std::string& doing) {
  throw_runtime("cannot write " + path + ": " + errno_text(error) + " (" + doing + ")");
}

void reserve_for(const std::string& path, const std::string& tmp, uint64_t bytes) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail_to_write(path, errno, "opening " + tmp);
  const int error = reserve_space(fd, bytes);
  ::close(fd);
  if (error != 0) {
    ::unlink(tmp.c_str());
    fail_to_write(path, error, "reserving " + std::to_string(bytes) + " bytes for " + tmp);
  }
}

}  // namespace

DiskFile DiskFile::create(const std::string& path, uint64_t reserve_bytes) {
  quiet();
  const std::string tmp = path + ".tmp";
  const Handle fapl = strong_close_access();
  Handle file = check(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose,
                      "creating " + tmp);
  DiskFile out(path, std::move(file));
  reserve_for(path, tmp, reserve_bytes);
  return out;
}

DiskFile DiskFile::copy_of(const std::string& path, uint64_t reserve_bytes) {
  quiet();
  const std::string tmp = path + ".tmp";
  std::error_code error;
  std::filesystem::copy_file(path, tmp, std::filesystem::copy_options::overwrite_existing, error);
  if (error) {
    std::filesystem::remove(tmp);
    throw_runtime("cannot write " + path + ": " + error.message() + " (copying it to " + tmp + ")");
  }
  reserve_for(path, tmp, reserve_bytes);
  const Handle fapl = strong_close_access();
  Handle file = check(H5Fopen(tmp.c_str(), H5F_ACC_RDWR, fapl.get()), H5Fclose, "opening " + tmp);
  return DiskFile(path, std::move(file));
}

DiskFile::~DiskFile() {
  if (committed_ || path_.empty()) return;
  file_.close();
  ::unlink((path_ + ".tmp").c_str());
}

void DiskFile::commit() {
  const std::string tmp = path_ + ".tmp";
  check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flushing " + tmp);
  if (file_.close() < 0) fail_to_write(path_, EIO, "closing " + tmp + " in HDF5");
  committed_ = true;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CLOEXEC);
  int error = fd < 0 ? errno : 0;
  if (error == 0) {
    // Truncating to its own size gives back the reserved blocks beyond the end.
    struct stat info {};
    if (::fstat(fd, &info) != 0 || ::ftruncate(fd, info.st_size) != 0) error = errno;
    if (error == 0 && ::fsync(fd) != 0) error = errno;
    if (::close(fd) != 0 && error == 0) error = errno;
  }
  if (error == 0) {
    const auto size = std::filesystem::file_size(tmp);
    if (::rename(tmp.c_str(), path_.c_str()) != 0) {
      error = errno;
    } else {
      saved_bytes += size;
    }
  }
  if (error != 0) {
    ::unlink(tmp.c_str());
    fail_to_write(path_, error, "writing " + tmp);
  }
}

bool is_hdf5(const std::string& path) {
  quiet();
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  return H5Fis_hdf5(path.c_str()) > 0;
}

Handle create_group(hid_t parent, const std::string& name) {
  return check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
               "creating group " + name);
}

Handle create_index_group(hid_t parent, const std::string& name) {
  // Tracking the links' creation order is what makes HDF5 (1.8 and later, with the default
  // format bounds) give the group the newer link storage, dense once it grows.
  const Handle properties = check(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, "H5Pcreate");
  check(H5Pset_link_creation_order(properties.get(), H5P_CRT_ORDER_TRACKED),
        "H5Pset_link_creation_order");
  return check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
               H5Gclose, "creating group " + name);
}

Handle open_group(hid_t parent, const std::string& name) {
  return check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose, "opening group " + name);
}

bool exists(hid_t parent, const std::string& name) {
  return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0;
}

namespace {
herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> child_names(hid_t group) {
  // One pass over the links (H5Literate): fetching them by index costs a walk of the
  // group's index per name, which made listing 100,000 groups take minutes.
  std::vector<std::string> names;
  hsize_t position = 0;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &position, collect_link_name, &names),
        "listing a group");
  return names;
}

std::vector<std::string> attribute_names(hid_t object) {
  std::vector<std::string> names;
  check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names),
        "listing attributes");
  return names;
}

void write_attr(hid_t object, const std::string& name, const std::string& value) {
  write_attr(object, name, value.c_str());
}

void write_attr(hid_t object, const std::string& name, const char* value) {
  const Handle type = utf8_string_type();
  write_scalar(object, name, type.get(), type.get(), &value);
}

void write_attr(hid_t object, const std::string& name, int64_t value) {
  write_scalar(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_attr(hid_t object, const std::string& name, double value) {
  write_scalar(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_attr(hid_t object, const std::string& name, const std::vector<std::string>& values) {
  std::vector<const char*> pointers;
  for (const std::string& value : values) pointers.push_back(value.c_str());
  const Handle type = utf8_string_type();
  const Handle space = simple_space(values.size(), 0);
  const Handle attr =
      check(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, "creating attribute " + name);
  if (!values.empty()) {
    check(H5Awrite(attr.get(), type.get(), pointers.data()), "writing attribute " + name);
  }
}

void write_attr(hid_t object, const std::string& name, const std::vector<int64_t>& values) {
  const Handle space = simple_space(values.size(), 0);
  const Handle attr =
      check(H5Acreate2(object, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, "creating attribute " + name);
  if (!values.empty()) {
    check(H5Awrite(attr.get(), H5T_NATIVE_INT64, values.data()), "writing attribute " + name);
  }
}

std::optional<std::string> read_attr_string(hid_t object, const std::string& name) {
  const std::optional<Handle> attr = open_attr(object, name);
  if (!attr) return std::nullopt;
  const Handle type = check(H5Aget_type(attr->get()), H5Tclose, "H5Aget_type");
  if (H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
  if (H5Tis_variable_str(type.get()) > 0) {
    const Handle memory = utf8_string_type();
    char* text = nullptr;
    check(H5Aread(attr->get(), memory.get(), &text), "reading attribute " + name);
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  std::string value(H5Tget_size(type.get()), '\0');
  check(H5Aread(attr->get(), type.get(), value.data()), "reading attribute " + name);
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

std::optional<int64_t> read_attr_int(hid_t object, const std::string& name) {
  const std::optional<Handle> attr = open_attr(object, name);
  if (!attr) return std::nullopt;
  const Handle type = check(H5Aget_type(attr->get()), H5Tclose, "H5Aget_type");
  if (H5Tget_class(type.get()) != H5T_INTEGER) return std::nullopt;
  int64_t value = 0;
  check(H5Aread(attr->get(), H5T_NATIVE_INT64, &value), "reading attribute " + name);
  return value;
}

std::optional<double> read_attr_double(hid_t object, const std::string& name) {
  const std::optional<Handle> attr = open_attr(object, name);
  if (!attr) return std::nullopt;
  const Handle type = check(H5Aget_type(attr->get()), H5Tclose, "H5Aget_type");
  const H5T_class_t type_class = H5Tget_class(type.get());
  if (type_class != H5T_FLOAT && type_class != H5T_INTEGER) return std::nullopt;
  double value = 0.0;
  check(H5Aread(attr->get(), H5T_NATIVE_DOUBLE, &value), "reading attribute " + name);
  return value;
}

std::optional<std::vector<int64_t>> read_attr_ints(hid_t object, const std::string& name) {
  const std::optional<Handle> attr = open_attr(object, name);
  if (!attr) return std::nullopt;
  const Handle type = check(H5Aget_type(attr->get()), H5Tclose, "H5Aget_type");
  if (H5Tget_class(type.get()) != H5T_INTEGER) return std::nullopt;
  const Handle space = check(H5Aget_space(attr->get()), H5Sclose, "H5Aget_space");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_runtime("HDF5: reading the shape of attribute " + name + " failed");
  std::vector<int64_t> values(static_cast<size_t>(count));
  if (count > 0) {
    check(H5Aread(attr->get(), H5T_NATIVE_INT64, values.data()), "reading attribute " + name);
  }
  return values;
}

std::optional<std::vector<std::string>> read_attr_strings(hid_t object, const std::string& name) {
  const std::optional<Handle> attr = open_attr(object, name);
  if (!attr) return std::nullopt;
  const Handle type = check(H5Aget_type(attr->get()), H5Tclose, "H5Aget_type");
  if (H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
  const Handle space = check(H5Aget_space(attr->get()), H5Sclose, "H5Aget_space");
  if (H5Sget_simple_extent_type(space.get()) == H5S_SCALAR) {
    return std::vector<std::string>{*read_attr_string(object, name)};
  }
  if (H5Sget_simple_extent_ndims(space.get()) != 1 || H5Tis_variable_str(type.get()) <= 0) {
    return std::nullopt;  // the format writes lists as variable-length strings only
  }
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_runtime("HDF5: reading the shape of attribute " + name + " failed");
  std::vector<char*> texts(static_cast<size_t>(count), nullptr);
  std::vector<std::string> values;
  if (count == 0) return values;
  const Handle memory = utf8_string_type();
  check(H5Aread(attr->get(), memory.get(), texts.data()), "reading attribute " + name);
  for (char* text : texts) {
    values.emplace_back(text != nullptr ? text : "");
    H5free_memory(text);
  }
  return values;
}

void copy_attrs(hid_t from, hid_t to) {
  for (const std::string& name : attribute_names(from)) {
    const Handle attr = check(H5Aopen(from, name.c_str(), H5P_DEFAULT), H5Aclose, "H5Aopen");
    const Handle space = check(H5Aget_space(attr.get()), H5Sclose, "H5Aget_space");
    const Handle type = check(H5Aget_type(attr.get()), H5Tclose, "H5Aget_type");
    if (H5Sget_simple_extent_type(space.get()) != H5S_SCALAR) {
      if (const auto values = read_attr_strings(from, name)) write_attr(to, name, *values);
      if (const auto values = read_attr_ints(from, name)) write_attr(to, name, *values);
      continue;
    }
    switch (H5Tget_class(type.get())) {
      case H5T_STRING:
        write_attr(to, name, *read_attr_string(from, name));
        break;
      case H5T_INTEGER:
        write_attr(to, name, *read_attr_int(from, name));
        break;
      case H5T_FLOAT:
        write_attr(to, name, *read_attr_double(from, name));
        break;
      default:
        break;
    }
  }
}

Handle write_dataset(hid_t parent, const std::string& name, const std::vector<double>& data,
                     size_t rows, size_t cols) {
  return write_raw(parent, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data.data(), rows, cols);
}

Handle write_dataset(hid_t parent, const std::string& name, const std::vector<int64_t>& data,
                     size_t rows, size_t cols) {
  return write_raw(parent, name, H5T_STD_I64LE, H5T_NATIVE_INT64, data.data(), rows, cols);
}

Handle write_dataset(hid_t parent, const std::string& name, const std::vector<int8_t>& data) {
  return write_raw(parent, name, H5T_STD_I8LE, H5T_NATIVE_INT8, data.data(), data.size(), 0);
}

Handle write_dataset(hid_t parent, const std::string& name, const std::vector<std::string>& data) {
  std::vector<const char*> pointers;
  for (const std::string& value : data) pointers.push_back(value.c_str());
  const Handle type = utf8_string_type();
  return write_raw(parent, name, type.get(), type.get(), pointers.data(), data.size(), 0);
}

void make_scale(hid_t dataset, const std::string& dimension) {
  check(H5DSset_scale(dataset, dimension.c_str()), "making dimension scale " + dimension);
}

void attach_scale(hid_t dataset, hid_t scale, unsigned axis) {
  check(H5DSattach_scale(dataset, scale, axis), "attaching a dimension scale");
}

namespace {

// The copied group's datasets by object address (relative path), so that a reference of the
// source's dimension-scale attributes is named by looking its target's address up here:
// H5Iget_name on an object opened through a reference searches the whole file, a cost that
// grew with the file and made merge slow. `translated`: each source reference met so far
// and its copy (one scale is named by every dataset of its dimension).
struct DatasetWalk {
  std::map<haddr_t, std::string> path_of;
  std::vector<std::string> datasets;
  std::map<hobj_ref_t, hobj_ref_t> translated;
};

herr_t note_dataset(hid_t, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto* walk = static_cast<DatasetWalk*>(data);
  walk->path_of.emplace(info->addr, name);
  walk->datasets.emplace_back(name);
  return 0;
}

// What a reference of the source file (resolved from `source`, any object of that file)
// becomes in the copy: the reference to the copied object of the same relative path.
// `dataset` holds the reference; `outside` says what it means when its target is not in
// the group.
hobj_ref_t translate(hid_t source, DatasetWalk& walk, hid_t copy, hobj_ref_t ref,
                     const std::string& dataset, const char* outside) {
  if (const auto known = walk.translated.find(ref); known != walk.translated.end()) {
    return known->second;
  }
  const Handle target = check(H5Rdereference2(source, H5P_DEFAULT, H5R_OBJECT, &ref), H5Oclose,
                              "following a dimension-scale reference of " + dataset);
  H5O_info_t info;
  check(H5Oget_info2(target.get(), &info, H5O_INFO_BASIC), "H5Oget_info2");
  const auto found = walk.path_of.find(info.addr);
  if (found == walk.path_of.end()) throw_runtime("HDF5: dataset " + dataset + outside);
  hobj_ref_t out;
  check(H5Rcreate(&out, copy, found->second.c_str(), H5R_OBJECT, -1),
        "referencing " + found->second);
  walk.translated.emplace(ref, out);
  return out;
}

std::optional<Handle> open_attr_if_present(hid_t object, const char* name) {
  const htri_t present = H5Aexists(object, name);
  check(present, "H5Aexists");
  if (present == 0) return std::nullopt;
  return check(H5Aopen(object, name, H5P_DEFAULT), H5Aclose,
               "opening attribute " + std::string(name));
}

// DIMENSION_LIST of an attached dataset: per axis, a list of references to its scales.
void translate_dimension_list(hid_t attr, hid_t source, DatasetWalk& walk, hid_t copy,
                              const std::string& dataset) {
  const Handle type = check(H5Tvlen_create(H5T_STD_REF_OBJ), H5Tclose, "H5Tvlen_create");
  const Handle space = check(H5Aget_space(attr), H5Sclose, "H5Aget_space");
  const hssize_t axes = H5Sget_simple_extent_npoints(space.get());
  if (axes < 0) throw_runtime("cannot read the DIMENSION_LIST of " + dataset);
  std::vector<hvl_t> lists(static_cast<size_t>(axes));
  check(H5Aread(attr, type.get(), lists.data()), "reading the DIMENSION_LIST of " + dataset);
  try {
    for (hvl_t& list : lists) {
      auto* refs = static_cast<hobj_ref_t*>(list.p);
      for (size_t i = 0; i < list.len; ++i) {
        refs[i] = translate(source, walk, copy, refs[i], dataset,
                            " has a dimension scale outside the group");
      }
    }
    check(H5Awrite(attr, type.get(), lists.data()), "writing the DIMENSION_LIST of " + dataset);
  } catch (...) {
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, lists.data());
    throw;
  }
  H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, lists.data());
}

// REFERENCE_LIST of a scale: one (dataset, axis) per attachment, members named as the
// HDF5 high-level library writes them.
struct Backlink {
  hobj_ref_t dataset;
  int dimension;
};

void translate_reference_list(hid_t attr, hid_t source, DatasetWalk& walk, hid_t copy,
                              const std::string& scale) {
  const Handle type = check(H5Tcreate(H5T_COMPOUND, sizeof(Backlink)), H5Tclose, "H5Tcreate");
  check(H5Tinsert(type.get(), "dataset", HOFFSET(Backlink, dataset), H5T_STD_REF_OBJ), "H5Tinsert");
  check(H5Tinsert(type.get(), "dimension", HOFFSET(Backlink, dimension), H5T_NATIVE_INT),
        "H5Tinsert");
  const Handle space = check(H5Aget_space(attr), H5Sclose, "H5Aget_space");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_runtime("cannot read the REFERENCE_LIST of " + scale);
  std::vector<Backlink> links(static_cast<size_t>(count));
  check(H5Aread(attr, type.get(), links.data()), "reading the REFERENCE_LIST of " + scale);
  for (Backlink& link : links) {
    link.dataset = translate(source, walk, copy, link.dataset, scale,
                             " is the dimension scale of a dataset outside the group");
  }
  check(H5Awrite(attr, type.get(), links.data()), "writing the REFERENCE_LIST of " + scale);
}

}  // namespace

void copy_group(hid_t from, hid_t to, const std::string& name) {
  const Handle source = open_group(from, name);
  DatasetWalk walk;
  check(H5Ovisit2(source.get(), H5_INDEX_NAME, H5_ITER_INC, note_dataset, &walk, H5O_INFO_BASIC),
        "listing the datasets of " + name);
  check(H5Ocopy(from, name.c_str(), to, name.c_str(), H5P_DEFAULT, H5P_DEFAULT), "copying " + name);
  const Handle copy = open_group(to, name);
  // The copied DIMENSION_LIST and REFERENCE_LIST hold the source's references (H5Ocopy
  // cannot translate references inside a variable-length or compound attribute): each is
  // rewritten in place, same shape and order, pointing at the copied objects: cheaper than
  // attaching the scales anew, where H5DSattach_scale rewrites a scale's whole list per
  // attachment (results/2026-12-02-results-scale.md).
  for (const std::string& path : walk.datasets) {
    const Handle set =
        check(H5Dopen2(copy.get(), path.c_str(), H5P_DEFAULT), H5Dclose, "opening dataset " + path);
    if (const auto attr = open_attr_if_present(set.get(), "DIMENSION_LIST")) {
      translate_dimension_list(attr->get(), source.get(), walk, copy.get(), path);
    }
    if (const auto attr = open_attr_if_present(set.get(), "REFERENCE_LIST")) {
      translate_reference_list(attr->get(), source.get(), walk, copy.get(), path);
    }
  }
}

std::vector<double> read_doubles(hid_t parent, const std::string& name) {
  return read_raw<double>(parent, name, H5T_NATIVE_DOUBLE);
}

std::vector<int64_t> read_ints(hid_t parent, const std::string& name) {
  return read_raw<int64_t>(parent, name, H5T_NATIVE_INT64);
}

std::vector<std::string> read_strings(hid_t parent, const std::string& name) {
  const Handle set =
      check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, "opening dataset " + name);
  const Handle file_type = check(H5Dget_type(set.get()), H5Tclose, "H5Dget_type");
  if (H5Tget_class(file_type.get()) != H5T_STRING || H5Tis_variable_str(file_type.get()) <= 0) {
    throw_runtime("dataset " + name + " is not of variable-length strings");
  }
  const Handle space = check(H5Dget_space(set.get()), H5Sclose, "H5Dget_space");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_runtime("cannot read the shape of dataset " + name);
  std::vector<char*> pointers(static_cast<size_t>(count), nullptr);
  const Handle type = utf8_string_type();
  if (count > 0) {
    check(H5Dread(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()),
          "reading dataset " + name);
  }
  std::vector<std::string> out;
  out.reserve(pointers.size());
  for (const char* p : pointers) out.emplace_back(p != nullptr ? p : "");
  if (count > 0) H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
  return out;
}

}  // namespace interplace::runs::h5
