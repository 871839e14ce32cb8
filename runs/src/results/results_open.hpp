// Opening a result file with the format check, shared by the reader and merge.
#pragma once

#include <string>

#include "hdf5_io.hpp"

namespace interplace::runs {

// Throws invalid_input for a missing file, a non-HDF5 file, or an HDF5 file that is not a
// result file of the supported format version; runtime for one that cannot be opened.
h5::Handle open_results_file(const std::string& path, bool writable);

}  // namespace interplace::runs
