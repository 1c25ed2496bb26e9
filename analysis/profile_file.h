// The HDF5 profile file: a traces::Profile (what `bubblesim import` measured) stored for later
// runs (`bubblesim simulate --profile`). A file format of its own, separate from the results
// store; docs/profile-format.md describes the layout.
//
// Root attributes `format` = "bubblesim-profile", `format_version` (kProfileFormatVersion),
// `bubblesim_version`, `command_line` and the profile's counters; compound datasets `passes`,
// `comms` and `devices`, one row per PassSample, CommSample and DeviceInfo. Reading a file back
// gives a Profile equal to the one written, field for field.
//
// Like results_file.h: call from one thread at a time (Debian's HDF5 is not thread-safe);
// HDF5's own error printing is silenced and failures are exceptions.
#pragma once

#include <string>

#include "analysis/results_file.h"
#include "sim/error.h"
#include "traces/profile.h"

namespace bubblesim::analysis {

inline constexpr const char* kProfileFormat = "bubblesim-profile";
inline constexpr int kProfileFormatVersion = 1;

// A profile file that cannot be read or written: missing, not HDF5, truncated, not a bubblesim
// profile, of an unknown format version, or lacking a dataset or attribute of the layout.
// what() is one line that starts with the file's path.
class ProfileFileError : public Error {
 public:
  using Error::Error;
};

// Writes `profile` to `path`, replacing any file there, by the writer rule (sim/output_file.h):
// written under a temporary name in the same folder, synced, then renamed over `path`; on
// failure `path` is left as it was and the temporary file removed. Throws ProfileFileError.
void write_profile(const std::string& path, const traces::Profile& profile,
                   const WriterInfo& writer);
// The same into `out`'s temporary; the caller commits `out`.
void write_profile(sim::OutputFile& out, const traces::Profile& profile, const WriterInfo& writer);

// Reads the profile file at `path`. Throws ProfileFileError naming the file and what is wrong.
// Safe to call from several threads (the reads take turns: libhdf5 is not thread-safe).
traces::Profile read_profile(const std::string& path);

}  // namespace bubblesim::analysis
