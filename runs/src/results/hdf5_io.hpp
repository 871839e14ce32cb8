// A thin layer over the HDF5 C API for the result files: handles that close themselves,
// and the few attribute and dataset shapes docs/results-format.md uses. Every failure
// becomes a runtime error naming what was being done (HDF5's own error stack printing
// is switched off: it would bury the one line the CLI prints).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace interplace::runs::h5 {

// Silences HDF5's automatic error printing (once per process).
void quiet();

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { close(); }

  hid_t get() const { return id_; }
  herr_t close();

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Throws runtime "<what> failed" when id < 0.
Handle check(hid_t id, Handle::Closer closer, const std::string& what);
void check(herr_t status, const std::string& what);

// Files: read them with open_file; write them through MemoryFile (below).
Handle open_file(const std::string& path, bool writable);
bool is_hdf5(const std::string& path);

// An HDF5 file built in memory (the core driver without a backing store) and put on disk by
// save() alone, so that HDF5 itself never writes to the disk. A full disk or any other
// write error is then one clear error of save(), while the file on disk stays as it was:
// HDF5 1.10, given ENOSPC, failed to close the file and crashed at exit (MPI_Finalize ends
// the library) on the file it still listed as open.
class MemoryFile {
 public:
  static MemoryFile create();                       // empty
  static MemoryFile load(const std::string& path);  // a copy of the file at `path`
  hid_t get() const { return file_.get(); }
  // Writes the image to `path`.tmp, flushes it to the disk and renames it over `path`.
  // Throws runtime "cannot write <path>: <cause>" (the .tmp removed) on any failure.
  void save(const std::string& path);
  // Bytes save() has written in this process (all files).
  static uint64_t bytes_saved();

 private:
  explicit MemoryFile(Handle file) : file_(std::move(file)) {}
  Handle file_;
};

// An HDF5 file too large to build in memory (a fold of a large file's journal, a merge),
// written by HDF5 itself (the sec2 driver) under `<path>.tmp` and renamed onto `path` by
// commit(), so that a kill at any moment leaves `path` as it was. Before HDF5 writes, the
// bytes it is to add are reserved on the disk (fallocate beyond the end of the file; where
// the file system cannot, its free space is checked): a full disk is then one clear error
// of ours ("cannot write <path>: No space left on device (reserving ...)"), not an ENOSPC
// inside HDF5, which made HDF5 1.10 crash at exit (MemoryFile). An uncommitted file is
// closed and removed.
class DiskFile {
 public:
  // A new, empty file for `path`; HDF5 will write at most about `reserve_bytes`.
  static DiskFile create(const std::string& path, uint64_t reserve_bytes);
  // A copy of the file at `path` (copied by the kernel, never held in memory), to which
  // HDF5 will add at most about `reserve_bytes`.
  static DiskFile copy_of(const std::string& path, uint64_t reserve_bytes);
  DiskFile(DiskFile&& other) noexcept
      : path_(std::move(other.path_)),
        file_(std::move(other.file_)),
        committed_(std::exchange(other.committed_, true)) {}
  DiskFile& operator=(DiskFile&&) = delete;
  ~DiskFile();
  hid_t get() const { return file_.get(); }
  // Closes the file, gives back what was reserved and not used, flushes it to the disk
  // (fsync) and renames it over `path`. Throws runtime "cannot write <path>: <cause>".
  void commit();

 private:
  DiskFile(std::string path, Handle file) : path_(std::move(path)), file_(std::move(file)) {}
  std::string path_;
  Handle file_;
  bool committed_ = false;
};

Handle create_group(hid_t parent, const std::string& name);
// A group meant to hold many children (a result file's configurations): its links in
// HDF5's dense storage (a fractal heap indexed by a v2 B-tree), where adding one costs the
// same at 100,000 children as at 1,000. The default, a symbol table in one local heap,
// cost 8x more per added group at 100,000 than at 20,000.
Handle create_index_group(hid_t parent, const std::string& name);
Handle open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& name);
std::vector<std::string> child_names(hid_t group);
std::vector<std::string> attribute_names(hid_t object);

// Scalar attributes.
void write_attr(hid_t object, const std::string& name, const std::string& value);
void write_attr(hid_t object, const std::string& name, const char* value);
void write_attr(hid_t object, const std::string& name, int64_t value);
void write_attr(hid_t object, const std::string& name, double value);
void write_attr(hid_t object, const std::string& name, const std::vector<std::string>& values);
void write_attr(hid_t object, const std::string& name, const std::vector<int64_t>& values);
std::optional<std::string> read_attr_string(hid_t object, const std::string& name);
// A one-dimensional string array attribute; a scalar string reads as one element (so
// readers take the lists of format 3 and the single strings of older files alike).
std::optional<std::vector<std::string>> read_attr_strings(hid_t object, const std::string& name);
std::optional<int64_t> read_attr_int(hid_t object, const std::string& name);
// An integer attribute of any shape (a scalar gives one value), as int64.
std::optional<std::vector<int64_t>> read_attr_ints(hid_t object, const std::string& name);
std::optional<double> read_attr_double(hid_t object, const std::string& name);
// Copies every scalar string, integer or float attribute and every one-dimensional string
// or integer array attribute of `from` onto `to` (the only attribute shapes the format has).
void copy_attrs(hid_t from, hid_t to);

// Datasets of shape [rows] (cols == 0) or [rows, cols], row-major data. Each returns the
// open dataset, for attributes and dimension scales.
Handle write_dataset(hid_t parent, const std::string& name, const std::vector<double>& data,
                     size_t rows, size_t cols = 0);
Handle write_dataset(hid_t parent, const std::string& name, const std::vector<int64_t>& data,
                     size_t rows, size_t cols = 0);
Handle write_dataset(hid_t parent, const std::string& name, const std::vector<int8_t>& data);
Handle write_dataset(hid_t parent, const std::string& name, const std::vector<std::string>& data);

// Dimension scales (HDF5 high-level library, H5DS): `dataset` becomes the scale of the
// dimension `dimension`, and attach_scale names axis `axis` of `dataset` by `scale`.
// netCDF-4 readers (h5netcdf, xarray) show such axes as named dimensions.
void make_scale(hid_t dataset, const std::string& dimension);
void attach_scale(hid_t dataset, hid_t scale, unsigned axis);
// Copies the group `name` of `from` into `to` (H5Ocopy) with its dimension scales tied as
// in the source: they are object references, and H5Ocopy into another file keeps the
// source file's addresses, which point nowhere there, so the copy's DIMENSION_LIST and
// REFERENCE_LIST are rewritten to the copied objects. A scale or dataset tied to one
// outside the group is refused (runtime error).
void copy_group(hid_t from, hid_t to, const std::string& name);
std::vector<double> read_doubles(hid_t parent, const std::string& name);
std::vector<int64_t> read_ints(hid_t parent, const std::string& name);
// A one-dimensional dataset of variable-length strings.
std::vector<std::string> read_strings(hid_t parent, const std::string& name);

}  // namespace interplace::runs::h5
