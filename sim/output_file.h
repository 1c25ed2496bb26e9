// One file a command writes, by the writer rule that every bubblesim output follows
// (docs/robustness.md):
//  - a new file, or an existing regular file, is written as a temporary file beside it and
//    renamed into place by commit(); an existing regular file that is read-only (no write
//    permission for the user, or no write bit at all) is refused with one line;
//  - an existing target that is not a regular file (/dev/null, /dev/stdout, a pipe) is never
//    replaced: the output is written to a temporary file in the system's temporary folder and
//    copied into the target by commit();
//  - a symlink is resolved and its target written (the link stays);
//  - a directory is refused;
//  - until commit(), the target is untouched; an OutputFile destroyed without commit() removes
//    its temporary, so a command that fails leaves none of its outputs behind.
// A command with several outputs opens them all first (so that a bad one fails before anything
// is computed), writes each to its temporary(), and commits them all only once everything
// succeeded.
#pragma once

#include <string>

namespace bubblesim::sim {

class OutputFile {
 public:
  // Checks `path` and prepares the temporary; throws Error ("PATH: why") when `path` is a
  // directory, a read-only file, empty, or its folder does not exist or cannot be written.
  explicit OutputFile(const std::string& path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();

  const std::string& path() const { return path_; }      // as given, for messages
  const std::string& target() const { return target_; }  // symlinks resolved
  // The target exists as a regular file (a writer that adds to a file reads it from target()).
  bool replaces_regular_file() const { return existing_regular_; }
  // The target exists and is not a regular file: written into, never replaced.
  bool writes_into_special_file() const { return special_; }
  // Where the writer writes (an empty file exists there).
  const std::string& temporary() const { return temporary_; }

  // Puts the temporary's content into place (rename, or copy into a special file); throws
  // Error naming path() on failure. At most once.
  void commit();

 private:
  std::string path_, target_, temporary_;
  bool existing_regular_ = false;
  bool special_ = false;
  bool done_ = false;
};

// Refuses two outputs of one command that are the same file: "option A and option B: both
// write PATH". `a`, `b`: the option names, with dashes.
void check_distinct_outputs(const OutputFile& a, const char* option_a, const OutputFile& b,
                            const char* option_b);

}  // namespace bubblesim::sim
