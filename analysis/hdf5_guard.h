// Reading HDF5 files from outside without letting libhdf5 take the process down.
//
// libhdf5 trusts the bytes of a file: a corrupted one can make it loop forever, crash or ask
// for hundreds of GB (docs/robustness.md). Before bubblesim opens an existing HDF5 file, a child
// process reads every object of it (each group, each attribute, each dataset, values included)
// under a time limit that grows with the file's size; only a file the child read cleanly is
// opened by the process itself. What is read is then checked against its own dimensions by the
// readers (results_file.cpp, profile_file.cpp).
//
// The child also rehearses the reader's own reads (`rehearse`): libhdf5 converts what it reads
// into the reader's types, and a corrupted file can overflow its buffers there only (a
// fuzzed profile did, in H5Dread's type conversion, after reading cleanly in its own types).
// The process then reads what its child has read without harm.
//
// Not protected: a file that changes between the check and the read, and damage that libhdf5
// reads without complaint (wrong values of the right type: the readers' range checks catch
// those they use).
#pragma once

#include <functional>
#include <string>

namespace bubblesim::analysis::hdf5 {

// "" when every object of the HDF5 file at `path` reads cleanly in a child process, and then
// `rehearse` (the caller's whole read of the file; what it throws is the caller's to report
// in the process) runs there to its end; else why not ("libhdf5 crashed reading it", "reading
// it took longer than 2.0 s", ...), to follow "PATH: ". Within a rehearsal it returns "" at
// once (the rehearsed reader checks its file again). Where the process has other threads, a
// child that runs out of time is tried once more: a fork copies the locks they hold, and a
// child that needs one of them waits forever (clang 14's ASan allocator). With the
// environment variable BUBBLESIM_HDF5_GUARD=0 the check is skipped.
std::string damaged_file_problem(const std::string& path,
                                 const std::function<void()>& rehearse = {});

}  // namespace bubblesim::analysis::hdf5
