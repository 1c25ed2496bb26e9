#include "sim/cli/options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "analysis/profile_file.h"
#include "models/transformer.h"
#include "traces/profile_costs.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

double parse_number(const std::string& option, std::string_view item, const std::string& text) {
  double value = 0;
  const char* end = item.data() + item.size();
  const auto [ptr, ec] = std::from_chars(item.data(), end, value);
  if (item.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    throw InvalidArgument("option " + option + ": '" + std::string(item) +
                          "' is not a number (in '" + text + "')");
  }
  return value;
}

double non_negative(const po::variables_map& vm, const char* name) {
  const double value = vm[name].as<double>();
  if (!std::isfinite(value) || value < 0) {
    throw InvalidArgument(std::string("option --") + name +
                          ": expected a finite number >= 0, got " + std::to_string(value));
  }
  return value;
}

// --model: times from the model's FLOPs where --f/--b/--w were left at their defaults, memory
// in bytes where --m-b/--m-w were, and the static memory of every device.
void apply_model(const po::variables_map& vm, RunInputs& in, std::vector<sim::TimeNs>& f,
                 std::vector<sim::TimeNs>& b, std::vector<sim::TimeNs>& w, std::vector<double>& m_b,
                 std::vector<double>& m_w) {
  const models::TransformerConfig model = models::load_transformer(vm["model"].as<std::string>());
  const models::GpuSpec& gpu = models::find_gpu(vm["gpu"].as<std::string>());
  const double efficiency = vm["efficiency"].as<double>();
  if (!(efficiency > 0 && efficiency <= 1)) {
    throw InvalidArgument("option --efficiency: expected a fraction in (0, 1], got " +
                          format_number(efficiency));
  }
  const std::vector<models::StageEstimate> stages = models::estimate_stages(model, in.params.pp);
  auto time = [&](double flops) {
    return sim::ms_to_ns(models::flops_to_ms(flops, gpu, efficiency));
  };
  for (std::size_t d = 0; d < stages.size(); ++d) {
    if (vm["f"].defaulted()) f[d] = time(stages[d].f_flops);
    if (vm["b"].defaulted()) b[d] = time(stages[d].b_flops);
    if (vm["w"].defaulted()) w[d] = time(stages[d].w_flops);
    if (vm["m-b"].defaulted()) m_b[d] = stages[d].m_b_bytes;
    if (vm["m-w"].defaulted()) m_w[d] = stages[d].m_w_bytes;
    in.static_memory_bytes.push_back(stages[d].static_bytes);
  }
  const bool measured = !vm["f"].defaulted() || !vm["b"].defaulted() || !vm["w"].defaulted() ||
                        vm.count("profile") != 0;
  in.model_description = fmt::format(
      "model {} on {} ({} GB): {} times, memory in bytes (static: 16 bytes per parameter)",
      model.name, gpu.name, gpu.memory_gb,
      measured ? "measured" : fmt::format("FLOP-based (efficiency {})", efficiency));
  in.samples_per_microbatch = model.microbatch_size;
  in.default_example = false;
}

// --profile: the times each device's stage took in the profile, where --f/--b/--w/--comm were
// left at their defaults; the samples for --samples.
void apply_profile(const po::variables_map& vm, RunInputs& in, const traces::Profile& profile,
                   std::vector<sim::TimeNs>& f, std::vector<sim::TimeNs>& b,
                   std::vector<sim::TimeNs>& w, std::vector<sim::TimeNs>& comm) {
  std::string split_note;
  double b_share = 0.5;
  if (vm.count("model") != 0) {
    const models::TransformerConfig model = models::load_transformer(vm["model"].as<std::string>());
    b_share = traces::backward_b_share(model.hidden, model.seq_len);
    split_note = fmt::format("B : W = (24h + 8s) : 24h = {:.4f} : {:.4f} (h {}, s {} of --model)",
                             b_share, 1 - b_share, model.hidden, model.seq_len);
  } else {
    split_note =
        "B : W = 1 : 1, the FLOP ratio (24h + 8s) : 24h for s << h (give --model for its h "
        "and s)";
  }
  traces::ProfileCosts costs;
  try {
    costs = traces::profile_costs(profile, in.params.pp, b_share);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("option --profile: " + in.profile + ": " + e.what());
  }
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  std::string split_stages;
  for (std::size_t d = 0; d < costs.stages.size(); ++d) {
    const traces::StageSamples& s = costs.stages[d];
    if (vm["f"].defaulted()) f[d] = traces::median_ns(s.f_ns);
    if (vm["b"].defaulted()) b[d] = traces::median_ns(s.b_ns);
    if (vm["w"].defaulted()) w[d] = traces::median_ns(s.w_ns);
    fewest = std::min({fewest, s.f_ns.size(), s.b_ns.size(), s.w_ns.size()});
    if (s.split_from_bw) split_stages += (split_stages.empty() ? "" : ",") + std::to_string(d);
    // --samples draws from the profile's samples, except for the times given explicitly.
    in.device_samples.push_back({vm["f"].defaulted() ? s.f_ns : std::vector{f[d]},
                                 vm["b"].defaulted() ? s.b_ns : std::vector{b[d]},
                                 vm["w"].defaulted() ? s.w_ns : std::vector{w[d]}});
  }
  std::string comm_source;
  if (!costs.comm_ns.empty() && vm["comm"].defaulted()) {
    std::fill(comm.begin(), comm.end(), traces::median_ns(costs.comm_ns));
    comm_source = fmt::format("median of its {} send/recv kernels", costs.comm_ns.size());
  } else if (!vm["comm"].defaulted()) {
    comm_source = "--comm (given)";
  } else {
    comm_source = "--comm (default; the profile has no send/recv kernels)";
  }
  const bool given = !vm["f"].defaulted() || !vm["b"].defaulted() || !vm["w"].defaulted();
  in.profile_description = fmt::format(
      "profile {}: F, B, W per stage = median kernel time of its samples (at least {} per "
      "stage and pass){}; comm = {}",
      in.profile, fewest, given ? ", except the --f/--b/--w given" : "", comm_source);
  if (!split_stages.empty()) {
    in.profile_description +=
        fmt::format("\nnote: stages {} ran a fused backward (BW) only; each BW sample was split {}",
                    split_stages, split_note);
  }
  in.default_example = false;
}

}  // namespace

void add_run_options(po::options_description& desc) {
  using DE = DefaultExample;
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
    ("mem-limit", po::value<double>()->default_value(0, "p*M_B"),
     "activation-memory limit per device for the schedules built under a limit (zb-auto, zb-v, "
     "v-half, v-min), unit of --m-b; inf for none")
    ("overlap-efficiency", po::value<double>()->default_value(0, "0"),
     "e in [0, 1]: an overlapped F&B pair (dualpipe, dualpipe-v) takes max(F, B) + (1 - e) "
     "min(F, B); 0: no gain, 1: the shorter pass hidden entirely")
    ("model", po::value<std::string>(),
     "transformer description (YAML, e.g. models/examples/gpt-1.5b.yaml): each device's F, B, W "
     "times from its FLOPs on --gpu, and M_B, M_W and static memory in bytes; --f/--b/--w and "
     "--m-b/--m-w given explicitly (measured) override it")
    ("gpu", po::value<std::string>()->default_value("A100-80GB"),
     "GPU type for --model: A100-40GB, A100-80GB, H100-SXM, H200, L40S")
    ("efficiency", po::value<double>()->default_value(models::kDefaultEfficiency, "0.45"),
     "fraction of the GPU's dense BF16 peak that --model's passes reach, in (0, 1]")
    ("profile", po::value<std::string>(),
     "HDF5 profile from 'bubblesim import --out' (docs/profile-format.md): each stage's F, B, W "
     "times are the median kernel time of its samples (stage s on device s; p = the profile's "
     "stages unless -p is given), a fused BW is split by the FLOP ratio, and comm is the median "
     "send/recv kernel if the profile has any; --f/--b/--w/--comm given explicitly override it")
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

std::vector<sim::TimeNs> parse_time_list(const std::string& option, const std::string& text,
                                         int devices) {
  std::vector<sim::TimeNs> values;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const double ms = parse_number(option, item, text);
    if (ms < 0 || ms > 1e9) {
      throw InvalidArgument("option " + option + ": time " + std::string(item) +
                            " ms is out of range (expected 0 to 1e9 ms)");
    }
    values.push_back(sim::ms_to_ns(ms));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (values.size() == 1) values.resize(static_cast<std::size_t>(devices), values.front());
  if (values.size() != static_cast<std::size_t>(devices)) {
    throw InvalidArgument(
        "option " + option + ": expected one time in ms or " + std::to_string(devices) +
        " comma-separated times (one per device), got " + std::to_string(values.size()));
  }
  return values;
}

namespace {

// The file's value of option `name`, which the user may repeat but not contradict.
int from_schedule(const po::variables_map& vm, const char* name, const char* flag, int value,
                  const std::string& what) {
  if (!vm[name].defaulted() && vm[name].as<int>() != value) {
    throw InvalidArgument(std::string("option ") + flag + " is " +
                          std::to_string(vm[name].as<int>()) + ", but the schedule file has " +
                          std::to_string(value) + " " + what);
  }
  return value;
}

}  // namespace

RunInputs read_run_inputs(const po::variables_map& vm, const sim::Schedule* from_file) {
  RunInputs in;
  in.params.pp = vm["pp"].as<int>();
  in.params.microbatches = vm["microbatches"].as<int>();
  in.params.chunks = vm["chunks"].as<int>();
  in.chunks_given = !vm["chunks"].defaulted();
  if (from_file != nullptr) {
    // A chunk pass costs 1/v of a device's share of one microbatch's work: v is the stages a
    // microbatch runs per device (stages per device, or half of them with two directions).
    const int devices = from_file->num_devices();
    if (from_file->num_stages() % devices != 0 || from_file->route_stages() % devices != 0) {
      throw InvalidArgument("the schedule file's " + std::to_string(from_file->num_stages()) +
                            " stages are not spread evenly over its " + std::to_string(devices) +
                            " ranks, so --f/--b/--w cannot be split into chunks");
    }
    in.params.pp = from_schedule(vm, "pp", "-p/--pp", devices, "ranks");
    in.params.microbatches = from_schedule(vm, "microbatches", "-m/--microbatches",
                                           from_file->num_microbatches, "microbatches");
    in.params.chunks =
        from_schedule(vm, "chunks", "-v/--chunks", from_file->route_stages() / devices,
                      "stages per rank on each microbatch's route");
    in.chunks_given = true;
  }
  in.json = vm["json"].as<bool>();
  if (vm.count("out") != 0) {
    in.out = vm["out"].as<std::string>();
    if (in.out.empty()) throw InvalidArgument("option --out: expected a file name");
  }
  in.overwrite = vm["overwrite"].as<bool>();
  if (vm.count("run-name") != 0) in.run_name = vm["run-name"].as<std::string>();
  if (in.out.empty() && (in.overwrite || vm.count("run-name") != 0)) {
    throw InvalidArgument("options --run-name and --overwrite apply only with --out FILE.h5");
  }
  in.default_example = from_file == nullptr;
  for (const char* name : {"pp", "microbatches", "f", "b", "w", "comm"}) {
    in.default_example = in.default_example && vm[name].defaulted();
  }
  traces::Profile profile;
  if (vm.count("profile") != 0) {
    in.profile = vm["profile"].as<std::string>();
    if (in.profile.empty()) throw InvalidArgument("option --profile: expected a file name");
    if (from_file != nullptr) {
      throw InvalidArgument("option --profile: cannot be combined with --schedule-file (yet)");
    }
    profile = analysis::read_profile(in.profile);
    if (vm["pp"].defaulted()) {
      // The profile's stage count, checked (and named in errors) by profile_costs.
      int stages = 0;
      for (const traces::PassSample& s : profile.passes)
        stages = std::max(stages, s.label.stage + 1);
      if (stages > 0) in.params.pp = stages;
    }
  }
  sim::require_pipeline(in.params);

  const int p = in.params.pp;
  auto f = parse_time_list("--f", vm["f"].as<std::string>(), p);
  auto b = parse_time_list("--b", vm["b"].as<std::string>(), p);
  auto w = parse_time_list("--w", vm["w"].as<std::string>(), p);
  auto comm = parse_time_list("--comm", vm["comm"].as<std::string>(), p);
  const double m_b = non_negative(vm, "m-b");
  const double m_w = non_negative(vm, "m-w");
  in.mem_limit = vm["mem-limit"].as<double>();
  if (std::isnan(in.mem_limit) || in.mem_limit < 0) {
    throw InvalidArgument("option --mem-limit: expected a number >= 0 or inf, got " +
                          std::to_string(in.mem_limit));
  }
  const double overlap = vm["overlap-efficiency"].as<double>();
  if (!(overlap >= 0 && overlap <= 1)) {
    throw InvalidArgument(
        fmt::format("option --overlap-efficiency: expected a number from 0 to 1, got {}", overlap));
  }

  std::vector<double> m_bs(static_cast<std::size_t>(p), m_b), m_ws(m_bs.size(), m_w);
  if (vm.count("model") != 0) {
    apply_model(vm, in, f, b, w, m_bs, m_ws);
  }
  if (!in.profile.empty()) apply_profile(vm, in, profile, f, b, w, comm);

  // The iteration cannot outlast all ops and transfers in a row: p m (T_F + T_B + T_W) plus
  // at most 2 p v m hops, with v <= 1024. Keep that far from the int64 clock's limit.
  long double worst = 0;
  for (int d = 0; d < p; ++d) {
    const auto i = static_cast<std::size_t>(d);
    in.device_costs.push_back(
        sim::DeviceCosts{f[i], b[i], w[i], comm[i], m_bs[i], m_ws[i], overlap});
    worst = std::max(worst, static_cast<long double>(f[i] + b[i] + w[i]) + 2048.0L * comm[i]);
  }
  if (worst * p * in.params.microbatches >
      static_cast<long double>(std::numeric_limits<sim::TimeNs>::max() / 4)) {
    throw InvalidArgument(
        "options --f/--b/--w/--comm with -p/-m: the iteration could last more than 70 years of "
        "simulated time; use smaller times or fewer microbatches");
  }
  return in;
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
    throw InvalidArgument("option " + option + ": expected FROM:TO:STEP with 0 < FROM <= TO and " +
                          "STEP > 0, got '" + text + "'");
  }
  const double steps = std::floor((parts[1] - parts[0]) / parts[2] + 1e-9);
  if (steps >= 1000) {
    throw InvalidArgument("option " + option + ": '" + text + "' gives more than 1000 points");
  }
  std::vector<double> values;
  for (int i = 0; i <= static_cast<int>(steps); ++i)
    values.push_back(parts[0] + i * parts[2]);
  return values;
}

sim::ScheduleParams params_for(const RunInputs& in, const sim::ScheduleGenerator& generator,
                               bool only_where_taken) {
  sim::ScheduleParams params = in.params;
  params.mem_limit = in.mem_limit;
  const bool apply = in.chunks_given && (generator.takes_chunks_option() || !only_where_taken);
  if (!apply) params.chunks = generator.default_chunks();
  return params;
}

}  // namespace bubblesim::cli
