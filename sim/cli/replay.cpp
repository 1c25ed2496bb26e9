// `bubblesim replay TRACE...`: simulates what the traces executed (traces/replay.h) and compares
// it with what they measured.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/prettywriter.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "traces/kineto_trace.h"
#include "traces/replay.h"
#include "traces/schedule_csv.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::OStreamWrapper>;

// A difference larger than this share of the measured iteration is explained.
constexpr double kExplainAbove = 0.05;

template <typename Device>
std::string device_name(const Device& d) {
  return d.thread == traces::kNoThread
             ? fmt::format("trace {} pid {}", d.trace, d.process)
             : fmt::format("trace {} pid {} tid {}", d.trace, d.process, d.thread);
}

std::string gap_kind(const traces::GapComparison& g) {
  if (g.measured_gap_ns < 0) {
    return "the trace overlaps it with the pass before, the simulation runs them one after the "
           "other";
  }
  if (g.measured_gap_ns > g.replayed_gap_ns) {
    return "idle time the trace has and the simulation does not";
  }
  return "waiting for an input that came earlier in the trace than the simulation thinks";
}

std::string gap_line(const traces::IterationReplay& r, const traces::GapComparison& g) {
  return fmt::format(
      "device {} ({}) before {}: the trace idles {:.3f} ms, the simulation {:.3f} ms "
      "({})",
      g.device, device_name(r.devices[static_cast<std::size_t>(g.device)]),
      traces::action_token(g.op), sim::ns_to_ms(g.measured_gap_ns),
      sim::ns_to_ms(g.replayed_gap_ns), gap_kind(g));
}

double relative(sim::TimeNs value, sim::TimeNs reference) {
  return reference > 0 ? static_cast<double>(value - reference) / reference : 0;
}

// The lines that say why an iteration's replay is off by more than kExplainAbove.
std::vector<std::string> explanation(const traces::IterationReplay& r) {
  std::vector<std::string> lines;
  if (std::abs(r.error()) <= kExplainAbove) return lines;
  std::string devices;
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const traces::DeviceReplay& dev = r.devices[d];
    if (std::abs(relative(dev.replayed_span_ns, dev.measured_span_ns)) > kExplainAbove) {
      devices +=
          fmt::format("{}{} ({}: {:.3f} ms measured, {:.3f} replayed)", devices.empty() ? "" : ", ",
                      d, device_name(dev), sim::ns_to_ms(dev.measured_span_ns),
                      sim::ns_to_ms(dev.replayed_span_ns));
    }
  }
  lines.push_back(
      fmt::format("iteration {}: the replay is {:.1f}% {} than the trace; devices whose "
                  "span differs by more than 5%: {}",
                  r.iteration, std::abs(r.error()) * 100, r.error() < 0 ? "shorter" : "longer",
                  devices.empty() ? "none" : devices));
  const sim::TimeNs threshold = r.measured_ns / 100;  // gaps of at least 1% of the iteration
  std::size_t shown = 0;
  for (const traces::GapComparison& g : r.gaps) {
    if (shown == 5 || std::llabs(g.measured_gap_ns - g.replayed_gap_ns) < threshold) break;
    lines.push_back("  " + gap_line(r, g));
    ++shown;
  }
  return lines;
}

void put(Writer& w, const char* key, double value) {
  w.Key(key);
  w.Double(value);
}

void write_json(std::ostream& out, const traces::ReplayResult& result) {
  // The top level: means over the iterations replayed; devices by (trace, pid).
  double measured = 0, replayed = 0, median = 0;
  struct Sums {
    double measured = 0, replayed = 0;
    int count = 0;
  };
  std::map<std::tuple<std::int32_t, std::int64_t, std::int64_t>, Sums> devices;
  for (const traces::IterationReplay& r : result.iterations) {
    measured += sim::ns_to_ms(r.measured_ns);
    replayed += sim::ns_to_ms(r.replayed_ns);
    median += sim::ns_to_ms(r.median_ns);
    for (const traces::DeviceReplay& d : r.devices) {
      Sums& s = devices[{d.trace, d.process, d.thread}];
      s.measured += sim::ns_to_ms(d.measured_span_ns);
      s.replayed += sim::ns_to_ms(d.replayed_span_ns);
      ++s.count;
    }
  }
  const double n = static_cast<double>(result.iterations.size());
  rapidjson::OStreamWrapper stream(out);
  Writer w(stream);
  w.SetIndent(' ', 2);
  w.StartObject();
  put(w, "measured_iteration_ms", measured / n);
  put(w, "replayed_iteration_ms", replayed / n);
  put(w, "median_iteration_ms", median / n);
  put(w, "replay_error", measured > 0 ? (replayed - measured) / measured : 0);
  w.Key("devices");
  w.StartArray();
  int index = 0;
  for (const auto& [key, s] : devices) {
    w.StartObject();
    w.Key("device");
    w.Int(index++);
    w.Key("trace");
    w.Int(std::get<0>(key));
    w.Key("process");
    w.Int64(std::get<1>(key));
    if (std::get<2>(key) != traces::kNoThread) {
      w.Key("thread");
      w.Int64(std::get<2>(key));
    }
    put(w, "measured_span_ms", s.measured / s.count);
    put(w, "replayed_span_ms", s.replayed / s.count);
    w.EndObject();
  }
  w.EndArray();
  w.Key("iterations");
  w.StartArray();
  for (const traces::IterationReplay& r : result.iterations) {
    w.StartObject();
    w.Key("iteration");
    w.Int(r.iteration);
    put(w, "measured_iteration_ms", sim::ns_to_ms(r.measured_ns));
    put(w, "replayed_iteration_ms", sim::ns_to_ms(r.replayed_ns));
    put(w, "median_iteration_ms", sim::ns_to_ms(r.median_ns));
    put(w, "replay_error", r.error());
    w.Key("devices");
    w.StartArray();
    for (std::size_t d = 0; d < r.devices.size(); ++d) {
      w.StartObject();
      w.Key("device");
      w.Int(static_cast<int>(d));
      put(w, "measured_span_ms", sim::ns_to_ms(r.devices[d].measured_span_ns));
      put(w, "replayed_span_ms", sim::ns_to_ms(r.devices[d].replayed_span_ns));
      w.EndObject();
    }
    w.EndArray();
    w.Key("explanation");
    w.StartArray();
    for (const std::string& line : explanation(r))
      w.String(line.c_str());
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("skipped");
  w.StartArray();
  for (const std::string& s : result.skipped)
    w.String(s.c_str());
  w.EndArray();
  w.EndObject();
  out << '\n';
}

void write_table(std::ostream& out, const traces::Profile& profile,
                 const traces::ReplayResult& result) {
  fmt::print(out, "{} labelled passes, {} iterations replayed", profile.passes.size(),
             result.iterations.size());
  if (profile.cpu_timed_passes > 0) {
    fmt::print(out, "; {} passes timed on the CPU (their trace has no GPU work)",
               profile.cpu_timed_passes);
  }
  out << '\n';
  for (const std::string& s : result.skipped)
    fmt::print(out, "skipped {}\n", s);
  fmt::print(out, "\n{:>9}  {:>12}  {:>12}  {:>8}  {:>12}  {:>8}\n", "iteration", "measured ms",
             "replayed ms", "error", "medians ms", "error");
  double measured = 0, replayed = 0;
  for (const traces::IterationReplay& r : result.iterations) {
    fmt::print(out, "{:>9}  {:>12.3f}  {:>12.3f}  {:>+7.2f}%  {:>12.3f}  {:>+7.2f}%\n", r.iteration,
               sim::ns_to_ms(r.measured_ns), sim::ns_to_ms(r.replayed_ns), r.error() * 100,
               sim::ns_to_ms(r.median_ns), relative(r.median_ns, r.measured_ns) * 100);
    measured += sim::ns_to_ms(r.measured_ns);
    replayed += sim::ns_to_ms(r.replayed_ns);
  }
  fmt::print(out,
             "replay error {:+.2f}% (replayed own durations against measured, {} iterations)\n",
             measured > 0 ? (replayed - measured) / measured * 100 : 0.0, result.iterations.size());
  for (const traces::IterationReplay& r : result.iterations) {
    fmt::print(out, "\niteration {}:\n{:>6}  {:<22} {:>12} {:>12}  {}\n", r.iteration, "device", "",
               "measured ms", "replayed ms", "largest idle time in the trace");
    for (std::size_t d = 0; d < r.devices.size(); ++d) {
      const traces::DeviceReplay& dev = r.devices[d];
      const std::string gap = dev.has_gap
                                  ? fmt::format("{:.3f} ms before {} (simulation {:.3f} ms)",
                                                sim::ns_to_ms(dev.largest.measured_gap_ns),
                                                traces::action_token(dev.largest.op),
                                                sim::ns_to_ms(dev.largest.replayed_gap_ns))
                                  : std::string("none");
      fmt::print(out, "{:>6}  {:<22} {:>12.3f} {:>12.3f}  {}\n", d, device_name(dev),
                 sim::ns_to_ms(dev.measured_span_ns), sim::ns_to_ms(dev.replayed_span_ns), gap);
    }
    for (const std::string& line : explanation(r))
      out << line << '\n';
  }
}

}  // namespace

void write_executed_summary(std::ostream& out, const traces::Profile& profile,
                            const std::string& write_schedule) {
  const std::vector<traces::ExecutedIteration> iterations = traces::executed_iterations(profile);
  std::string written;
  if (!write_schedule.empty()) {
    std::string why;
    std::optional<sim::Schedule> schedule;
    for (const traces::ExecutedIteration& it : iterations) {
      try {
        schedule = traces::executed_schedule(it);
        written = fmt::format("iteration {}", it.iteration);
        break;
      } catch (const Error& e) {
        why += std::string(why.empty() ? "" : "; ") + e.what();
      }
    }
    if (!schedule) {
      throw Error("option --write-schedule: no iteration of the traces is a complete schedule" +
                  (why.empty() ? std::string(" (no labelled passes)") : ": " + why));
    }
    traces::save_schedule_csv(write_schedule, *schedule);
  }
  if (iterations.empty()) return;
  fmt::print(out,
             "\nexecuted order (iterations split at the optimizer step or --iteration-regex, "
             "and where a pass comes again; trace clocks):\n");
  if (profile.cpu_timed_passes > 0) {
    fmt::print(out,
               "{} passes are timed by their own ranges: their traces have no GPU work "
               "(recorded on CPU)\n",
               profile.cpu_timed_passes);
  }
  for (const traces::ExecutedIteration& it : iterations) {
    fmt::print(out, "iteration {}: {} devices, measured {:.3f} ms (first pass start to last end)\n",
               it.iteration, it.devices.size(), sim::ns_to_ms(it.end_ns - it.start_ns));
    for (std::size_t d = 0; d < it.devices.size(); ++d) {
      const traces::ExecutedDevice& device = it.devices[d];
      sim::TimeNs end = device.passes.front().end_ns;
      for (const traces::ExecutedPass& p : device.passes)
        end = std::max(end, p.end_ns);
      const sim::TimeNs span = end - device.passes.front().start_ns;
      std::string order;
      constexpr std::size_t kShown = 24;
      for (std::size_t i = 0; i < device.passes.size() && i < kShown; ++i) {
        order += ' ';  // appended piece by piece: GCC 12 misreads " " + ... (-Wrestrict)
        order += traces::action_token(device.passes[i].op);
      }
      if (device.passes.size() > kShown) {
        order += fmt::format(" ... ({} more)", device.passes.size() - kShown);
      }
      fmt::print(out, "  device {} ({}): {} passes, span {:.3f} ms:{}\n", d, device_name(device),
                 device.passes.size(), sim::ns_to_ms(span), order);
    }
  }
  if (!written.empty()) {
    fmt::print(out, "wrote the executed order of {} to {}\n", written, write_schedule);
  }
}

int cmd_replay(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("trace", po::value<std::vector<std::string>>(), "trace files, one per rank (positional)")
    ("json", po::bool_switch(), "print the comparison as JSON")
    ("label-regex", po::value<std::string>(),
     "name ranges by this regular expression with named groups pass (F, B, W, BW; I for B; "
     "forward, backward) and optionally stage, microbatch, chunk, instead of PyTorch's "
     "PP:<stage><F|I|W|B><mb>")
    ("iteration-regex", po::value<std::string>(),
     "ranges whose name matches start an iteration (default: the optimizer step, "
     "Optimizer\\.step#.*); a labelled pass that comes again on its device also starts one")
    ("comm", po::value<double>()->default_value(0),
     "time of every transfer between devices in the simulation, ms")
    ("p2p", po::value<std::string>()->default_value("async"),
     "async: transfers occupy no compute stream; blocking: sender and receiver hold their "
     "streams for them (as Megatron's NCCL sends and receives)");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(args, desc, vm, out,
                     "usage: bubblesim replay TRACE... [--label-regex REGEX] [--iteration-regex "
                     "REGEX] [--comm MS] [--p2p async|blocking] [--json]\n\n"
                     "Simulates the order of passes each rank executed in PyTorch profiler traces, "
                     "every pass taking its own measured time (and, second, its stage's median "
                     "time), and compares the iteration time and each device's span with what "
                     "the traces measured (docs/replay.md).",
                     "trace")) {
    return 0;
  }
  if (vm.count("trace") == 0) {
    throw InvalidArgument("give one or more trace files, one per rank (see --help)");
  }
  const double comm_ms = vm["comm"].as<double>();
  if (!(comm_ms >= 0 && comm_ms <= 1e9)) {
    throw InvalidArgument("option --comm: expected a time in ms from 0 to 1e9");
  }
  const std::string p2p = vm["p2p"].as<std::string>();
  if (p2p != "async" && p2p != "blocking") {
    throw InvalidArgument("option --p2p: expected async or blocking, got '" + p2p + "'");
  }
  std::unique_ptr<traces::RangeLabeller> labeller;
  if (vm.count("label-regex") != 0) {
    labeller = std::make_unique<traces::RegexLabeller>(vm["label-regex"].as<std::string>());
  } else {
    labeller = std::make_unique<traces::PipeliningLabeller>();
  }
  const std::string iteration = vm.count("iteration-regex") != 0
                                    ? vm["iteration-regex"].as<std::string>()
                                    : std::string(traces::kOptimizerStepPattern);
  const traces::Profile profile = traces::import_kineto_traces(
      vm["trace"].as<std::vector<std::string>>(), *labeller, iteration);
  const traces::ReplayResult result =
      traces::replay_profile(profile, sim::ms_to_ns(comm_ms),
                             p2p == "blocking" ? sim::P2pMode::Blocking : sim::P2pMode::Async);
  if (vm["json"].as<bool>()) {
    write_json(out, result);
  } else {
    write_table(out, profile, result);
  }
  return 0;
}

}  // namespace bubblesim::cli
