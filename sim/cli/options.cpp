#include "sim/cli/options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "analysis/calibration.h"
#include "analysis/profile_file.h"
#include "models/gpu_catalogue.h"
#include "models/transformer.h"
#include "traces/profile_costs.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

using app::parse_number;

void add_run_options(po::options_description& desc) {
  using DE = app::DefaultExample;
  // clang-format off
  desc.add_options()
    ("pp,p", po::value<int>()->default_value(DE::kPp), "pipeline devices p")
    ("microbatches,m", po::value<int>()->default_value(DE::kMicrobatches), "microbatches m per iteration")
    ("chunks,v", po::value<int>()->default_value(1), "model chunks per device, where the schedule takes them")
    ("f", po::value<std::string>()->default_value(DE::kF),
     "forward time (ms) of a device's share of the model for one microbatch: one value, or a "
     "comma-separated list with one value per device")
    ("b", po::value<std::string>()->default_value(DE::kB), "input-gradient (B) time, ms, same form")
    ("w", po::value<std::string>()->default_value(DE::kW),
     "weight-gradient (W) time, ms, same form (a fused BW takes B + W)")
    ("comm", po::value<std::string>()->default_value(DE::kComm),
     "one hop between consecutive stages, ms, same form (a list gives the time of what each "
     "device sends)")
    ("m-b", po::value<double>()->default_value(1.0, "1"),
     "activation memory M_B an F allocates (any unit; results use the same unit)")
    ("m-w", po::value<double>()->default_value(0.5, "0.5"), "activation memory M_W that B keeps for W")
    ("no-improve", po::bool_switch(),
     "zb-1p, zb-2p, zb-auto, zb-v, v-half, v-min: the generator's schedule as it is, without "
     "the local search that improves it (sim/schedules/improve.h)")
    ("mem-limit", po::value<double>()->default_value(0, "p*M_B"),
     "activation-memory limit per device for the schedules built under a limit (zb-auto, zb-v, "
     "v-half, v-min), unit of --m-b; inf for none")
    ("overlap-efficiency", po::value<double>()->default_value(0, "0"),
     "e in [0, 1]: an overlapped F&B pair (dualpipe, dualpipe-v) takes max(F, B) + (1 - e) "
     "min(F, B); 0: no gain, 1: the shorter pass hidden entirely")
    ("paper-evaluator", po::bool_switch(),
     "time the runs as the zero-bubble paper's evaluator did, to reproduce its published 1F1B-I "
     "column: on a looped placement (1f1b-i) only the first microbatch of each round of p waits "
     "for the input that wraps around from the last device to device 0, the others start as if "
     "it had arrived. Optimistic: real devices wait for every input. Other schedules are "
     "unchanged")
    ("model", po::value<std::string>(),
     "transformer description (YAML, e.g. models/examples/gpt-1.5b.yaml): each device's F, B, W "
     "times from its FLOPs on --gpu, and M_B, M_W and static memory in bytes; --f/--b/--w and "
     "--m-b/--m-w given explicitly (measured) override it")
    ("gpu", po::value<std::string>()->default_value("A100-80GB"),
     ("GPU type for --model: " + models::gpu_preset_names() +
      "; with --cluster, the GPU the given times are for (other GPUs run them scaled by the "
      "ratio of dense peaks)").c_str())
    ("efficiency", po::value<double>()->default_value(models::kDefaultEfficiency, "0.45"),
     "fraction of the GPU's dense BF16 peak that --model's passes reach, in (0, 1]")
    ("profile", po::value<std::string>(),
     "HDF5 profile from 'bubblesim import --out' (docs/profile-format.md): each stage's F, B, W "
     "times are the median kernel time of its samples (stage s on device s; p = the profile's "
     "stages unless -p is given), a fused BW is split by the FLOP ratio, and comm is the median "
     "send/recv kernel if the profile has any; --f/--b/--w/--comm given explicitly override it")
    ("cluster", po::value<std::string>(),
     "cluster description (YAML, docs/cluster-format.md, e.g. models/examples/"
     "a100-4x8-roce.yaml): GPUs, links and placement; transfers then cross its links and share "
     "them, and each device runs at its GPU's and speed factor's pace")
    ("dp", po::value<int>()->default_value(1),
     "data-parallel replicas of the pipeline (with --dp > 1: --cluster, and --model or "
     "--grad-bytes); each stage's gradients are all-reduced after its last W")
    ("allreduce", po::value<std::string>()->default_value("ring"),
     "cost model of the gradient all-reduce: ring or tree")
    ("optimizer-sync", po::value<std::string>()->default_value("none"),
     "optimizer step at the end of the iteration: none (not modelled), allreduce (all devices "
     "synchronise, then step) or post-validation (each device steps when its gradients are in)")
    ("optimizer-ms", po::value<double>(),
     "time of the optimizer step per device, ms (default with --model: 28 bytes per parameter "
     "over the GPU's memory bandwidth; else 0)")
    ("comm-bytes", po::value<double>(),
     "bytes of one activation transfer between stages, for --cluster's links (default with "
     "--model: 2 s b h)")
    ("grad-bytes", po::value<double>(),
     "gradient bytes of one pipeline device's share of the model, for --dp's all-reduce "
     "(default with --model: 2 bytes per parameter)")
    ("op-overhead", po::value<std::string>(),
     "fixed cost (ms) before every pass on its device, launch and host time: one value, or per "
     "kind F=MS,B=MS,W=MS (a fused BW pays B's); a chunk pass pays it whole. Default 0")
    ("p2p", po::value<std::string>()->default_value("async"),
     "point-to-point transfers: async (a transfer delays only its receiver) or blocking (as "
     "Megatron's: the sender's and the receiver's compute streams are held for it; not with "
     "--cluster). docs/calibration.md")
    ("calibration", po::value<std::string>(),
     "CAL.yaml from 'bubblesim calibrate': its op overheads, p2p mode and efficiency apply "
     "where --op-overhead, --p2p and --efficiency are not given")
    ("max-memory", po::value<double>(),
     "GB a run may take (estimated from its ops before anything is built; default 80% of the "
     "machine's memory): a larger run is refused at once")
    ("json", po::bool_switch(), "print the summary as JSON instead of a table")
    ("out", po::value<std::string>(),
     "also add the runs (every op, transfer and memory change) to this HDF5 results file, "
     "created if missing (docs/results-format.md)")
    ("run-name", po::value<std::string>(),
     "with --out: the run's name in the file instead of the schedule's (compare: a prefix, "
     "NAME.SCHEDULE)")
    ("overwrite", po::bool_switch(), "with --out: replace runs of the same names in the file");
  // clang-format on
}

namespace {

// The option's value where it was given explicitly, else none.
template <typename T>
std::optional<T> given(const po::variables_map& vm, const char* name) {
  if (vm.count(name) == 0 || vm[name].defaulted()) return std::nullopt;
  return vm[name].as<T>();
}

std::optional<std::vector<double>> given_ms(const po::variables_map& vm, const char* name) {
  const std::optional<std::string> text = given<std::string>(vm, name);
  if (!text) return std::nullopt;
  return app::parse_ms_list(name, *text);
}

}  // namespace

app::ScenarioSettings settings_from_options(const po::variables_map& vm) {
  app::ScenarioSettings s;
  s.pp = given<int>(vm, "pp");
  s.microbatches = given<int>(vm, "microbatches");
  s.chunks = given<int>(vm, "chunks");
  s.f_ms = given_ms(vm, "f");
  s.b_ms = given_ms(vm, "b");
  s.w_ms = given_ms(vm, "w");
  s.comm_ms = given_ms(vm, "comm");
  s.m_b = given<double>(vm, "m-b");
  s.m_w = given<double>(vm, "m-w");
  s.no_improve = vm["no-improve"].as<bool>();
  s.mem_limit = given<double>(vm, "mem-limit");
  s.overlap_efficiency = given<double>(vm, "overlap-efficiency");
  s.paper_evaluator = vm["paper-evaluator"].as<bool>();
  s.model = given<std::string>(vm, "model");
  s.gpu = given<std::string>(vm, "gpu");
  s.efficiency = given<double>(vm, "efficiency");
  s.profile = given<std::string>(vm, "profile");
  s.cluster = given<std::string>(vm, "cluster");
  s.dp = given<int>(vm, "dp");
  s.allreduce = given<std::string>(vm, "allreduce");
  s.optimizer_sync = given<std::string>(vm, "optimizer-sync");
  s.optimizer_ms = given<double>(vm, "optimizer-ms");
  s.comm_bytes = given<double>(vm, "comm-bytes");
  s.grad_bytes = given<double>(vm, "grad-bytes");
  if (const auto text = given<std::string>(vm, "op-overhead"))
    s.op_overhead = parse_op_overheads("op-overhead", *text);
  if (const auto text = given<std::string>(vm, "p2p")) s.p2p = parse_p2p("p2p", *text);
  s.calibration = given<std::string>(vm, "calibration");
  s.max_memory_gb = given<double>(vm, "max-memory");
  s.keep_record = vm.count("out") != 0;
  return s;
}

RunInputs read_run_inputs(const po::variables_map& vm, const sim::Schedule* from_file) {
  RunInputs in;
  in.json = vm["json"].as<bool>();
  if (vm.count("out") != 0) {
    in.out = vm["out"].as<std::string>();
    if (in.out.empty()) throw InvalidArgument("option --out: expected a file name");
  }
  in.overwrite = vm["overwrite"].as<bool>();
  if (vm.count("run-name") != 0) {
    in.run_name = vm["run-name"].as<std::string>();
    if (in.run_name.empty()) throw InvalidArgument("option --run-name: expected a non-empty name");
  }
  if (in.out.empty() && (in.overwrite || vm.count("run-name") != 0)) {
    throw InvalidArgument("options --run-name and --overwrite apply only with --out FILE.h5");
  }
  app::ScheduleFileInput file;
  if (from_file != nullptr) file = {from_file, vm["schedule-file"].as<std::string>()};
  static_cast<app::Scenario&>(in) = app::make_scenario(settings_from_options(vm), file);
  return in;
}

int read_jobs(const po::variables_map& vm) {
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 0 || jobs > 4096) {
    throw InvalidArgument("option -j/--jobs: expected 0 (all cores) to 4096, got " +
                          std::to_string(jobs));
  }
  return jobs;
}

std::vector<double> parse_sweep(const std::string& option, const std::string& text) {
  std::vector<double> parts;
  std::string_view rest = text;
  for (std::size_t colon; (colon = rest.find(':')) != std::string_view::npos;
       rest.remove_prefix(colon + 1)) {
    parts.push_back(parse_number(option, rest.substr(0, colon), text));
  }
  parts.push_back(parse_number(option, rest, text));
  if (parts.size() != 3 || parts[0] <= 0 || parts[1] < parts[0] || parts[2] <= 0) {
    throw app::SettingError(
        option, "expected FROM:TO:STEP with 0 < FROM <= TO and STEP > 0, got '" + text + "'");
  }
  const double steps = std::floor((parts[1] - parts[0]) / parts[2] + 1e-9);
  if (steps >= 1000) {
    throw app::SettingError(option, "'" + text + "' gives more than 1000 points");
  }
  std::vector<double> values;
  for (int i = 0; i <= static_cast<int>(steps); ++i)
    values.push_back(parts[0] + i * parts[2]);
  return values;
}

std::string message_of(const std::exception& e) {
  if (const auto* setting = dynamic_cast<const app::SettingError*>(&e)) {
    return "option --" + setting->setting() + ": " + setting->problem();
  }
  return e.what();
}

std::string program_options_message(const std::exception& e, const std::vector<std::string>& args) {
  const bool placeholder = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a.find('%') != std::string::npos;
  });
  if (!placeholder) return e.what();
  // Boost substitutes the token for %original_token% (and the like) until none is left: a token
  // holding a placeholder never ends. Such errors are told without Boost's text.
  const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
  return (named != nullptr ? "option '" + named->get_option_name() + "'" : std::string("options")) +
         ": not an option this command takes, or a value it cannot take";
}

std::uint64_t parse_whole_number(const std::string& option, const std::string& text,
                                 std::uint64_t min, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    throw InvalidArgument("option " + option + ": expected a whole number from " +
                          std::to_string(min) + " to " + std::to_string(max) + ", got '" + text +
                          "'");
  }
  return value;
}

}  // namespace bubblesim::cli
