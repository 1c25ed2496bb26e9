// The HDF5 results store (DESIGN.md §4; the layout is documented in docs/results-format.md).
//
// One file holds many runs: root attributes `format` = "bubblesim-results", `format_version`
// (kResultsFormatVersion), `bubblesim_version` and `command_line` (of the last program that
// wrote the file), and one group /runs/<name> per run with its parameters and summary as
// attributes and the compound datasets `ops`, `transfers`, `memory` and `devices` (chunked,
// shuffled and deflated). Strings are variable-length UTF-8 HDF5 strings.
//
// These functions use the HDF5 C library, which is not thread-safe in Debian's build: call
// them from one thread at a time. They silence HDF5's own error printing while they run and
// report failures as exceptions instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_record.h"
#include "sim/error.h"
#include "sim/output_file.h"

namespace bubblesim::analysis {

inline constexpr const char* kResultsFormat = "bubblesim-results";
inline constexpr int kResultsFormatVersion = 1;

// A results file that cannot be read or written: missing, not HDF5, truncated, not a bubblesim
// results file, of an unknown format version, or lacking what the layout requires. what() is
// one line that starts with the file's path.
class ResultsFileError : public Error {
 public:
  using Error::Error;
};

// A run to write is already in the file and overwriting was not asked for.
class RunExistsError : public ResultsFileError {
 public:
  using ResultsFileError::ResultsFileError;
};

// Who writes the file: the root attributes of the same names.
struct WriterInfo {
  std::string bubblesim_version;
  std::string command_line;
};

// Writes `runs` into the results file at `path`, creating it or keeping the runs it holds.
// A run whose name the file already holds is replaced with `overwrite`, and otherwise makes the
// call throw RunExistsError before anything is written. Run names must be distinct and valid
// (RunRecord::name), else InvalidArgument.
//
// By the writer rule (sim/output_file.h): the new file is written under a temporary name in the
// same folder (the existing runs copied into it) and renamed over `path` only once complete and
// synced, so a failure or crash leaves `path` as it was; a read-only file or a directory is
// refused. Throws ResultsFileError for an existing file that is not a readable
// results file of this format version, or when the file cannot be written.
void write_runs(const std::string& path, const std::vector<RunRecord>& runs,
                const WriterInfo& writer, bool overwrite = false);
// The same into `out`'s temporary (an existing file read from out.target()); the caller commits
// `out` (sim/output_file.h), so that a command with several outputs writes all or none.
void write_runs(sim::OutputFile& out, const std::vector<RunRecord>& runs, const WriterInfo& writer,
                bool overwrite = false);

// One row of /sweep/table: a configuration of a study (`bubblesim sweep`), its inputs and, when
// it ran, its summary metrics. Times in ms; memory in activation units (unit of m_b), or bytes
// with a model. Per-device inputs are those of device 0.
struct SweepRow {
  std::int32_t index = 0;  // the configuration's position in the study, from 0
  std::string key;         // the configuration's inputs as options: identifies it on resume
  std::string schedule;
  std::int32_t pp = 0;
  std::int32_t microbatches = 0;
  std::int32_t chunks = 0;
  double f_ms = 0, b_ms = 0, w_ms = 0, comm_ms = 0;
  double m_b = 0, m_w = 0;
  double mem_limit = 0;  // as given: 0 the schedule's default, inf none
  std::string model;     // --model file, "" for none
  std::string gpu;       // with a model
  double iteration_time_ms = 0;
  double max_device_span_ms = 0;
  double bubble_rate = 0;
  double peak_activation_memory = 0;
  std::string cluster;  // --cluster file, "" for none
  std::int32_t dp = 1;  // data-parallel replicas
  // With a model (else 0): the largest device peak, static plus activations, and samples per
  // second per GPU over the iteration (all-reduce and optimizer step included).
  double peak_memory_bytes = 0;
  double samples_per_gpu_per_s = 0;
  std::string status;  // "ok", or "error" (then `error` says why and the metrics are 0)
  std::string error;

  friend bool operator==(const SweepRow&, const SweepRow&) = default;
};

// Which study a sweep table is of (attributes of /sweep), so that `bubblesim merge` joins only
// tables of one study, and which shard of it the writer ran.
struct SweepInfo {
  std::string study_fingerprint;          // analysis::study_fingerprint of the study
  std::int32_t study_configurations = 0;  // how many the whole study has
  std::int32_t shard = 0, shards = 0;     // --shard K/N; 0 and 0 for the whole study

  friend bool operator==(const SweepInfo&, const SweepInfo&) = default;
};

// Writes `rows` as the dataset /sweep/table of the results file at `path`, replacing any sweep
// table it holds and keeping its runs (creating the file if missing), with `info` as the
// attributes of /sweep (none when its fingerprint is empty). Atomic like write_runs.
void write_sweep_table(const std::string& path, const std::vector<SweepRow>& rows,
                       const WriterInfo& writer, const SweepInfo& info = {});

// Reads a results file. The constructor opens `path` read-only and checks the format and its
// version; every failure throws ResultsFileError naming the file.
class ResultsReader {
 public:
  explicit ResultsReader(const std::string& path);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  int format_version() const { return format_version_; }
  // The root attributes.
  WriterInfo writer() const;
  // The names of the runs, sorted.
  std::vector<std::string> run_names() const;
  // The run called `name`; throws ResultsFileError when there is none or it is malformed.
  RunRecord read_run(const std::string& name) const;
  // Whether the file holds /sweep/table, and its rows in file order.
  bool has_sweep_table() const;
  std::vector<SweepRow> read_sweep_table() const;
  // The attributes of /sweep; nothing when the table has none (written before bubblesim kept
  // them).
  std::optional<SweepInfo> sweep_info() const;

 private:
  std::string path_;
  std::int64_t file_;  // the HDF5 file's hid_t, kept out of this header
  int format_version_ = 0;
};

}  // namespace bubblesim::analysis
