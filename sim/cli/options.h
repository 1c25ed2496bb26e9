// Options shared by `bubblesim simulate` and `bubblesim compare` (DESIGN.md §4), and their
// checking. Every bad value throws bubblesim::InvalidArgument naming the option.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <vector>

#include <optional>

#include "models/cluster.h"
#include "models/collectives.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "sim/schedule_registry.h"
#include "traces/sampled_cost_model.h"

namespace bubblesim::cli {

// What a simulate or compare run needs besides the schedule names.
struct RunInputs {
  sim::ScheduleParams params;  // chunks: the -v given, see chunks_given
  bool chunks_given = false;
  bool mem_limit_given = false;  // --mem-limit was given (a schedule that takes none refuses it)
  double mem_limit = 0;          // --mem-limit, unit of --m-b; 0: each schedule's default
  std::vector<sim::DeviceCosts> device_costs;  // one per device
  bool json = false;
  bool default_example = false;  // p, m and all times left at the embedded example's values
  // With --model: each device's static memory (parameters, gradients, optimizer state) in
  // bytes, and a line saying where the costs came from; empty otherwise (memory then has the
  // unit of --m-b).
  std::vector<double> static_memory_bytes;
  std::string model_description;
  int samples_per_microbatch = 0;  // --model's microbatch size; 0 without a model
  // With --model: the FLOPs of one microbatch through the whole pipeline (F + B + W of every
  // stage), each pipeline device's parameters, and the --gpu the model's times are for.
  double flops_per_microbatch = 0;
  double model_transfer_bytes = 0;  // 2 s b h: one activation between stages
  std::vector<double> parameters;
  std::string gpu;

  // --cluster, --dp, --allreduce, --optimizer-sync (docs/cluster-format.md). `replicated` is
  // set when any of them changes the run: the schedule then runs as dp replicas on dp*pp
  // logical devices (replica r's device d is r*pp + d) with `replica_costs` (one per logical
  // device: the device's durations scaled to its GPU and speed), over `network` when a cluster
  // is given, and the iteration is finished by models::finish_iteration with `iteration`.
  // Without them, runs are exactly as before (device_costs, no network).
  bool replicated = false;
  int dp = 1;
  std::string cluster_path;
  std::string cluster_description;
  std::vector<int> physical_device;      // per logical device, with --cluster
  std::vector<std::string> device_gpus;  // per logical device, with --cluster or --model
  std::vector<double> capacity_bytes;    // per logical device, with --model (GPU memory)
  double peak_flops_total = 0;           // sum of the logical devices' dense peaks, FLOP/s
  std::vector<sim::DeviceCosts> replica_costs;
  std::optional<sim::Network> network;
  models::IterationInputs iteration;
  std::string allreduce_name = "ring";
  // --paper-evaluator: InputRule::PaperEvaluator (sim/engine.h); never with `replicated`.
  sim::InputRule input_rule = sim::InputRule::All;
  std::string optimizer_sync_name = "none";
  // --op-overhead (every DeviceCosts carries it too), --p2p, and --calibration's file ("" for
  // none; its values apply where the options were not given).
  sim::OpOverheads overheads;
  sim::P2pMode p2p = sim::P2pMode::Async;
  std::string calibration;
  // With --profile: its file, a description of where the costs came from (the statistic, the
  // split of a fused BW) for the report, and each device's duration samples in ns for
  // --samples (a time given explicitly is its only sample); empty otherwise.
  std::string profile;
  std::string profile_description;
  std::vector<traces::DurationSamples> device_samples;
  // --out: the HDF5 results file the runs are added to, "" for none; --run-name (a name for
  // the run, "" for the schedule's) and --overwrite (replace runs of the same names).
  std::string out;
  std::string run_name;
  bool overwrite = false;
};

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

// Adds -p, -m, -v, --f, --b, --w, --comm, --m-b, --m-w, --mem-limit, --overlap-efficiency,
// --paper-evaluator,
// --model, --gpu, --efficiency, --profile, --cluster, --dp, --allreduce, --optimizer-sync,
// --optimizer-ms, --comm-bytes, --grad-bytes, --json, --out, --run-name and --overwrite to `desc`.
void add_run_options(boost::program_options::options_description& desc);

// `text` as a whole number from `min` to `max` (decimal digits only: "-1" is refused rather than
// wrapped, as Boost.Program_options would for an unsigned type); else InvalidArgument naming
// `option`.
std::uint64_t parse_whole_number(const std::string& option, const std::string& text,
                                 std::uint64_t min, std::uint64_t max);

// The memory a run is estimated to need, before anything is built: an upper bound of its ops
// (3 p v m dp; v taken as at least 2 where not given, the V schedules' default) times what the
// schedule, graph, engine and timeline hold per op, plus the results record's per op with
// --out (`record`). Measured on 1F1B, ZB-H1 and ZB-auto at p = 64, m = 8192: 38 to 54 bytes
// per op simulated, 170 with the record.
inline constexpr double kSimulationBytesPerOp = 64;
inline constexpr double kRecordBytesPerOp = 160;
double estimated_run_bytes(const sim::ScheduleParams& params, bool chunks_given, int dp,
                           bool record);
// The --max-memory default: 80% of the machine's physical memory, in bytes.
double default_max_memory_bytes();

// The message of an error of Boost.Program_options raised parsing `args`, safely: its what()
// loops forever when the offending token itself holds a placeholder such as "%original_token%"
// (found by fuzzing), so when an argument holds a '%', a message of ours naming the option is
// given instead.
std::string program_options_message(const std::exception& e, const std::vector<std::string>& args);

// Reads and checks the options added by add_run_options. With `from_file`, p, m and v are the
// file's (devices, microbatches, and the stages a microbatch runs per device: stages per device,
// or half of them in a bidirectional schedule); -p/-m/-v given must agree with them.
RunInputs read_run_inputs(const boost::program_options::variables_map& vm,
                          const sim::Schedule* from_file = nullptr);

// The parameters one schedule runs with: the -v given, else the schedule's own default. With
// `only_where_taken` (compare, sweep), a -v or --mem-limit given applies only to schedules that
// take it; without, a --mem-limit given to a schedule that takes none is an InvalidArgument.
sim::ScheduleParams params_for(const RunInputs& in, const sim::ScheduleGenerator& generator,
                               bool only_where_taken);

// Parses "1.5" or "1.5,2,2.5": one time in ms for all devices or one per device, each
// 0 <= t <= 1e9. Returns exactly `devices` values in ns.
std::vector<sim::TimeNs> parse_time_list(const std::string& option, const std::string& text,
                                         int devices);

// Parses --op-overhead: "MS" (every pass) or "F=MS,B=MS,W=MS" (kinds left out: 0), each
// 0 <= ms <= 1e6.
sim::OpOverheads parse_op_overheads(const std::string& option, const std::string& text);
// Parses --p2p: "async" or "blocking".
sim::P2pMode parse_p2p(const std::string& option, const std::string& text);
const char* p2p_name(sim::P2pMode mode);
// "0.5" when all three are equal, else "F=0.5,B=0.25,W=0" (ms).
std::string describe_op_overheads(const sim::OpOverheads& o);

// Parses "FROM:TO:STEP" (0 < FROM <= TO, STEP > 0, at most 1000 points): FROM, FROM + STEP,
// ... up to TO.
std::vector<double> parse_sweep(const std::string& option, const std::string& text);

}  // namespace bubblesim::cli
