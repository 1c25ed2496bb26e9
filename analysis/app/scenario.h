// The settings of one run and the scenario they assemble (DESIGN.md §2, the application layer):
// a typed ScenarioSettings (what a user gave: on the command line, in a study or a runs file) is
// validated and assembled once by make_scenario into a Scenario (the schedule parameters, every
// device's costs, the cluster's network and what finishes the iteration), which app::run
// (analysis/app/run.h) simulates. `bubblesim simulate`, `compare`, `sweep`, `calibrate` and
// `advise` all build their runs here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/study.h"
#include "models/collectives.h"
#include "models/gpu_catalogue.h"
#include "models/transformer.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/network.h"
#include "sim/schedule_registry.h"
#include "traces/sampled_cost_model.h"

namespace bubblesim::analysis::app {

// The embedded default example: the zero-bubble paper's 1.5B model at p = 8, m = 24
// (../shared/reference/zero-bubble.md §8), times in ms.
struct DefaultExample {
  static constexpr int kPp = 8;
  static constexpr int kMicrobatches = 24;
  static constexpr const char* kF = "18.522";
  static constexpr const char* kB = "18.086";
  static constexpr const char* kW = "9.337";
  static constexpr const char* kComm = "0.601";
};

// Bad input for one setting of a run (sim/error.h).
using bubblesim::SettingError;

// The GPU the times are for when a setting does not name one.
inline constexpr const char* kDefaultGpu = "A100-80GB";

// What a user gave for one run, each setting named after the option of `bubblesim simulate`
// (and the study key) it comes from; an empty optional was not given and takes its default.
// Times are in ms: one value for every device or one per device (checked against p by
// make_scenario); memory M_B and M_W in any unit, or bytes with a model.
struct ScenarioSettings {
  std::optional<int> pp, microbatches, chunks;  // defaults: the DefaultExample's p, m; v = 1
  std::optional<std::vector<double>> f_ms, b_ms, w_ms, comm_ms;  // default: the example's
  std::optional<double> m_b, m_w;                                // defaults 1 and 0.5
  bool no_improve = false;                   // the generators' schedule without the local search
  std::optional<double> mem_limit;           // > 0 or inf; default p M_B
  std::optional<double> overlap_efficiency;  // [0, 1], default 0
  bool paper_evaluator = false;              // sim::InputRule::PaperEvaluator
  std::optional<std::string> model;          // transformer YAML
  std::optional<models::TransformerConfig> transformer;  // instead of `model`: one already read
  std::optional<std::string> gpu;                        // default A100-80GB
  std::optional<models::GpuSpec> gpu_spec;  // instead of `gpu`: one not in the catalogue
  std::optional<double> efficiency;         // default models::kDefaultEfficiency
  std::optional<std::string> profile;       // HDF5 profile
  std::optional<std::string> cluster;       // cluster YAML
  std::optional<int> dp;                    // default 1
  std::optional<std::string> allreduce, optimizer_sync;  // defaults "ring", "none"
  std::optional<double> optimizer_ms, comm_bytes, grad_bytes;
  std::optional<sim::OpOverheads> op_overhead;
  std::optional<sim::P2pMode> p2p;
  std::optional<std::string> calibration;  // CAL.yaml
  std::optional<double> max_memory_gb;     // default 80% of the machine's memory
  bool keep_record = false;  // the run's record is kept for a results file (memory estimate)
};

// A schedule read from a file that the scenario runs instead of a generated one: p, m and v
// are the file's, and settings given must agree with them.
struct ScheduleFileInput {
  const sim::Schedule* schedule = nullptr;
  std::string path;  // for messages
};

// The unit of a run's activation-memory figures (M_B, M_W, memory limits, activation peaks):
// the unit the settings gave M_B in (any), or bytes when a model gave them.
enum class MemoryUnit { kGiven, kBytes };

// One run's scenario: validated, every device's costs known. Memory figures (m_b, m_w of the
// costs, mem_limit, peaks) are in `memory_unit`; fields ending in _bytes always in bytes.
struct Scenario {
  MemoryUnit memory_unit = MemoryUnit::kGiven;
  sim::ScheduleParams params;  // chunks: the v given, see chunks_given
  bool chunks_given = false;
  bool mem_limit_given = false;  // a schedule that takes no memory limit refuses one given
  double mem_limit = 0;          // unit of M_B; 0: each schedule's default
  std::vector<sim::DeviceCosts> device_costs;  // one per device
  bool default_example = false;  // p, m and all times left at the embedded example's values
  // With a model: each device's static memory (parameters, gradients, optimizer state) in
  // bytes, and a line saying where the costs came from; empty otherwise.
  std::vector<double> static_memory_bytes;
  std::string model_description;
  int samples_per_microbatch = 0;  // the model's microbatch size; 0 without a model
  // With a model: the FLOPs of one microbatch through the whole pipeline (F + B + W of every
  // stage), each pipeline device's parameters, and the GPU the model's times are for.
  double flops_per_microbatch = 0;
  double model_transfer_bytes = 0;  // 2 s b h: one activation between stages
  std::vector<double> parameters;
  std::string gpu;

  // A cluster, dp or optimizer sync (`replicated`): the schedule runs as dp replicas on dp*pp
  // logical devices (replica r's device d is r*pp + d) with `replica_costs` (one per logical
  // device: the device's durations scaled to its GPU and speed), over `network` when a cluster
  // is given, and the iteration is finished by models::finish_iteration with `iteration`.
  // Without them, runs use device_costs and no network.
  bool replicated = false;
  int dp = 1;
  std::string cluster_path;
  std::string cluster_description;
  std::vector<int> physical_device;      // per logical device, with a cluster
  std::vector<std::string> device_gpus;  // per logical device, with `replicated`
  std::vector<double> capacity_bytes;    // per logical device, with a model (GPU memory)
  double peak_flops_total = 0;           // sum of the logical devices' dense peaks, FLOP/s
  std::vector<sim::DeviceCosts> replica_costs;
  std::optional<sim::Network> network;
  models::IterationInputs iteration;
  std::string allreduce_name = "ring";
  sim::InputRule input_rule = sim::InputRule::All;  // never PaperEvaluator with `replicated`
  std::string optimizer_sync_name = "none";
  // The op overheads (every DeviceCosts carries them too), the p2p mode, and the calibration
  // file ("" for none; its values apply where the settings did not give them).
  sim::OpOverheads overheads;
  sim::P2pMode p2p = sim::P2pMode::Async;
  std::string calibration;
  // With a profile: its file, a description of where the costs came from for the report, and
  // each device's duration samples in ns for Monte Carlo runs (a time given is its only
  // sample); empty otherwise.
  std::string profile;
  std::string profile_description;
  std::vector<traces::DurationSamples> device_samples;
};

// Validates `settings` and assembles the scenario: times from the settings, else the model's
// FLOPs or the profile's medians, else the example's; the cluster's links and GPUs; the
// calibration where the settings leave overheads, p2p and efficiency out. Throws
// InvalidArgument (or a file's own error) naming the setting and what was expected.
Scenario make_scenario(const ScenarioSettings& settings, const ScheduleFileInput& file = {});

// The settings of a study configuration (analysis/study.h), its values parsed as the options
// of the same names; the schedule is not a setting. In a study, mem-limit 0 names the
// schedule's default.
ScenarioSettings settings_from_study(const StudyConfiguration& configuration);

// The parameters one schedule runs with: the v given, else the schedule's own default. With
// `only_where_taken` (compare, sweep), a v or memory limit given applies only to schedules that
// take it; without, a memory limit given to a schedule that takes none is an InvalidArgument.
sim::ScheduleParams params_for(const Scenario& scenario, const sim::ScheduleGenerator& generator,
                               bool only_where_taken);

// The memory a run is estimated to need, before anything is built: an upper bound of its ops
// (3 p v m dp; v taken as at least 2 where not given, the V schedules' default) times what the
// schedule, graph, engine and timeline hold per op, plus the results record's per op
// (`record`). Measured on 1F1B, ZB-H1 and ZB-auto at p = 64, m = 8192: 38 to 54 bytes per op
// simulated, 170 with the record.
inline constexpr double kSimulationBytesPerOp = 64;
inline constexpr double kRecordBytesPerOp = 160;
double estimated_run_bytes(const sim::ScheduleParams& params, bool chunks_given, int dp,
                           bool record);
// The default memory limit of a run: 80% of the machine's physical memory, in bytes.
double default_max_memory_bytes();

// The parsers below throw SettingError naming `option`, the setting ("f", "op-overhead").
// `item`, a part of `text`, as a finite number.
double parse_number(const std::string& option, std::string_view item, const std::string& text);
// Parses "1.5" or "1.5,2,2.5": one time in ms for all devices or one per device, each
// 0 <= t <= 1e9; `option` names the setting in messages.
std::vector<double> parse_ms_list(const std::string& option, const std::string& text);
// The ms list as exactly `devices` values in ns (one value is repeated).
std::vector<sim::TimeNs> times_for_devices(const std::string& option, const std::vector<double>& ms,
                                           int devices);
// Parses an op overhead: "MS" (every pass) or "F=MS,B=MS,W=MS" (kinds left out: 0), each
// 0 <= ms <= 1e6.
sim::OpOverheads parse_op_overheads(const std::string& option, const std::string& text);
// Parses a p2p mode: "async" or "blocking".
sim::P2pMode parse_p2p(const std::string& option, const std::string& text);
const char* p2p_name(sim::P2pMode mode);
// "0.5" when all three are equal, else "F=0.5,B=0.25,W=0" (ms).
std::string describe_op_overheads(const sim::OpOverheads& o);

}  // namespace bubblesim::analysis::app
