// A study: the YAML file `bubblesim sweep` reads (docs/sweeps.md). It names settings held fixed,
// axes to vary (their cartesian product) and/or an explicit list of configurations; this
// expands it into the configurations to simulate, in a fixed order.
//
// Settings are named after the command-line options of `bubblesim simulate` (schedule, pp,
// microbatches, chunks, f, b, w, comm, m-b, m-w, mem-limit, overlap-efficiency, model, gpu,
// efficiency, cluster, dp, allreduce, optimizer-sync, optimizer-ms, comm-bytes, grad-bytes),
// with the short forms p, m, v and '_' for '-' accepted. Values are checked for
// their type here (with the line); whether they suit the schedule is found by simulating.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/error.h"

namespace bubblesim::analysis {

// A study file that cannot be read or is malformed. what() is one line:
// "FILE:LINE: key 'KEY': what was expected".
class StudyError : public Error {
 public:
  using Error::Error;
};

struct StudySetting {
  std::string key;    // canonical name: the long option's name ("pp", "mem-limit")
  std::string value;  // as the option takes it ("1,2,1,2" for a per-device list); a model's
                      // path made absolute
  int line = 0;       // 1-based line of the value in the study file
};

// One configuration: its settings in the canonical order of kStudyKeys, each key at most once.
struct StudyConfiguration {
  std::vector<StudySetting> settings;

  const StudySetting* find(const std::string& key) const;
  // The settings as "key=value" joined by spaces: identifies the configuration.
  std::string key() const;
};

// The configurations are built on demand from the study's parts, never all at once: a study of
// millions of configurations run with --limit costs only what it runs.
struct Study {
  using Settings = std::map<std::size_t, StudySetting>;  // by index in study_keys()

  std::string path;
  Settings fixed;
  std::vector<Settings> configs;  // at least one (empty when the file has none)
  std::vector<std::pair<std::size_t, std::vector<StudySetting>>> axes;  // key index, values
  std::size_t per_config = 1;  // the product of the axes' sizes

  // How many configurations: configs in file order, each crossed with the axes.
  std::size_t size() const { return per_config * configs.size(); }
  // Configuration i (< size()): configs[i / per_config] over the fixed settings, crossed with
  // the axes in mixed radix, the last axis varying fastest.
  StudyConfiguration configuration(std::size_t i) const;
  // Every value `key` takes anywhere in the study, for checks that need not build every
  // configuration.
  std::vector<StudySetting> values_of(const std::string& key) const;
};

// The canonical setting names, in the order configurations list them.
const std::vector<std::string>& study_keys();

// 16 hex digits of a 64-bit FNV-1a hash of the study's parts (fixed settings, configs, axes, in
// order), which decide every configuration: equal for the same study read anywhere with the
// same paths, and cheap for a study of millions of configurations.
std::string study_fingerprint(const Study& study);

// Reads and expands the study at `path`; throws StudyError naming the file, line and key.
// At most `max_configurations` configurations (a guard against a typo exploding the product).
Study load_study(const std::string& path, std::size_t max_configurations = 10'000'000);

// One measured run of a runs file (`bubblesim calibrate RUNS.yaml`, docs/calibration.md): the
// settings of a study configuration and exactly one measurement.
struct MeasuredRun {
  StudyConfiguration configuration;
  double measured_iteration_ms = 0;           // > 0, or 0 when the run gives the other
  double measured_samples_per_gpu_per_s = 0;  // > 0, or 0
  int line = 0;                               // 1-based line of the run in the file
};

struct MeasuredRuns {
  std::string path;
  std::vector<MeasuredRun> runs;  // in file order
  int runs_line = 0;              // 1-based line of the `runs:` key
};

// Reads a runs file: `runs:`, a non-empty list of mappings of study settings (as in a study's
// configs) plus measured_iteration_ms or measured_samples_per_gpu_per_s, and optionally
// `fixed:`, settings every run has unless it gives its own. Throws StudyError naming the file,
// line and key (an unknown key, a missing or doubled measurement, a run without a schedule).
MeasuredRuns load_measured_runs(const std::string& path);

}  // namespace bubblesim::analysis
