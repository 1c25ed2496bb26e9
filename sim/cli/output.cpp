#include "sim/cli/output.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/prettywriter.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace bubblesim::cli {

using app::mfu;
using app::oom;
using app::over_capacity_bytes;
using app::peak_memory_bytes;
using app::throughput_samples_per_s;

namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::OStreamWrapper>;

void put(Writer& w, const char* key, int value) {
  w.Key(key);
  w.Int(value);
}
void put(Writer& w, const char* key, double value) {
  w.Key(key);
  w.Double(value);
}

// Tables show memory in GB when it is in bytes (--model), else in the unit of --m-b.
double table_memory(const RunSummary& run, double value) {
  return run.memory_unit == app::MemoryUnit::kBytes ? value / 1e9 : value;
}
const char* activation_header(const RunSummary& run) {
  return run.memory_unit == app::MemoryUnit::kBytes ? "peak act. GB" : "peak act. mem";
}

// The schedule's name and parameters, for a run object and a sweep.
void put_run_head(Writer& w, const RunSummary& run) {
  w.Key("schedule");
  w.String(run.schedule.c_str());
  put(w, "pp", run.params.pp);
  put(w, "microbatches", run.params.microbatches);
  put(w, "chunks", run.params.chunks);
}

// The summary metrics, for a run object and a sweep point.
void put_summary(Writer& w, const RunSummary& run) {
  const sim::Metrics& m = run.metrics;
  put(w, "iteration_time_ms", sim::ns_to_ms(iteration_time_ns(run)));
  put(w, "max_device_span_ms", sim::ns_to_ms(m.max_device_span_ns));
  put(w, "bubble_rate", m.bubble_rate);
  put(w, "peak_activation_memory", m.peak_activation_memory);
}

}  // namespace

namespace {

void write_object(Writer& w, const RunSummary& run) {
  const sim::Metrics& m = run.metrics;
  w.StartObject();
  put_run_head(w, run);
  put_summary(w, run);
  for (const app::SummaryField& f : app::summary_fields(run)) {
    w.Key(f.key);
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::string>) {
            w.String(value.c_str());
          } else if constexpr (std::is_same_v<T, bool>) {
            w.Bool(value);
          } else if constexpr (std::is_same_v<T, int>) {
            w.Int(value);
          } else {
            w.Double(value);
          }
        },
        f.value);
  }
  if (run.iteration && !run.capacity_bytes.empty()) {
    w.Key("oom_devices");  // follows "oom"
    w.StartArray();
    for (const sim::DeviceMetrics& d : m.devices) {
      if (over_capacity_bytes(run, d) <= 0) continue;
      w.StartObject();
      put(w, "device", d.device);
      w.Key("gpu");
      w.String(run.device_gpus[static_cast<std::size_t>(d.device)].c_str());
      put(w, "over_bytes", over_capacity_bytes(run, d));
      w.EndObject();
    }
    w.EndArray();
  }
  if (run.exact) {
    const ExactSummary& e = *run.exact;
    w.Key("exact");
    w.StartObject();
    w.Key("status");
    w.String(e.proven_optimal ? "optimal" : "time_limit");
    put(w, "max_device_span_ms", e.span_ms);
    put(w, "heuristic_max_device_span_ms", e.heuristic_ms);
    put(w, "bound_ms", e.bound_ms);
    put(w, "gap", e.gap);
    put(w, "solve_s", e.solve_s);
    put(w, "time_limit_s", e.time_limit_s);
    w.EndObject();
  }
  if (!run.profile.empty()) {
    w.Key("profile");
    w.StartObject();
    w.Key("file");
    w.String(run.profile.c_str());
    w.Key("statistic");
    w.String("median_kernel_time");
    w.EndObject();
  }
  if (run.monte_carlo) {
    const MonteCarloSummary& mc = *run.monte_carlo;
    w.Key("monte_carlo");
    w.StartObject();
    put(w, "samples", mc.samples);
    w.Key("seed");
    w.Uint64(mc.seed);
    for (const auto& [key, d] : {std::pair{"iteration_time_ms", &mc.iteration_time_ms},
                                 std::pair{"bubble_rate", &mc.bubble_rate}}) {
      w.Key(key);
      w.StartObject();
      put(w, "mean", d->mean);
      put(w, "p50", d->p50);
      put(w, "p90", d->p90);
      put(w, "p99", d->p99);
      w.EndObject();
    }
    w.EndObject();
  }
  w.Key("devices");
  w.StartArray();
  for (const sim::DeviceMetrics& d : m.devices) {
    w.StartObject();
    put(w, "device", d.device);
    put(w, "span_ms", sim::ns_to_ms(d.span_ns));
    put(w, "busy_ms", sim::ns_to_ms(d.busy_ns));
    put(w, "bubble_rate", d.bubble_rate);
    put(w, "peak_activation_memory", d.peak_activation_memory);
    if (!run.static_memory_bytes.empty()) {
      put(w, "static_memory_bytes", run.static_memory_bytes[static_cast<std::size_t>(d.device)]);
      put(w, "peak_memory_bytes", peak_memory_bytes(run, d));
    }
    const auto i = static_cast<std::size_t>(d.device);
    if (!run.device_gpus.empty()) {
      w.Key("gpu");
      w.String(run.device_gpus[i].c_str());
    }
    if (!run.physical_device.empty()) put(w, "physical_device", run.physical_device[i]);
    if (!run.capacity_bytes.empty()) put(w, "capacity_bytes", run.capacity_bytes[i]);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

template <typename Body>
void with_writer(std::ostream& out, Body body) {
  rapidjson::OStreamWrapper stream(out);
  Writer writer(stream);
  writer.SetIndent(' ', 2);
  body(writer);
  out << '\n';
}

// "18.522" for a uniform list, "18.5,19,20" otherwise.
std::string ms_list(const std::vector<sim::DeviceCosts>& costs,
                    sim::TimeNs sim::DeviceCosts::*field) {
  const bool uniform = std::all_of(costs.begin(), costs.end(), [&](const sim::DeviceCosts& c) {
    return c.*field == costs.front().*field;
  });
  std::string s;
  for (const sim::DeviceCosts& c : costs) {
    if (!s.empty()) s += ',';
    s += fmt::format("{}", sim::ns_to_ms(c.*field));
    if (uniform) break;
  }
  return s;
}

// "zb-h1", or "1f1b-i v=3" for a schedule with several chunks per device.
std::string label(const RunSummary& run) {
  return run.params.chunks > 1 ? fmt::format("{} v={}", run.schedule, run.params.chunks)
                               : run.schedule;
}

// The share of the model's parameters on each device, as a fraction: "1/8", "1/4".
std::string model_share(const RunSummary& run) {
  const int divisor = std::gcd(run.model_copies, run.params.pp);
  return fmt::format("{}/{}", run.model_copies / divisor, run.params.pp / divisor);
}

}  // namespace

void write_json(std::ostream& out, const RunSummary& run) {
  with_writer(out, [&](Writer& w) { write_object(w, run); });
}

void write_json(std::ostream& out, const std::vector<RunSummary>& runs) {
  with_writer(out, [&](Writer& w) {
    w.StartArray();
    for (const RunSummary& run : runs)
      write_object(w, run);
    w.EndArray();
  });
}

std::string describe_inputs(const RunInputs& in) {
  // With a cluster of one replica, each device's own durations (scaled to its GPU and speed).
  const auto& c = in.replicated && in.dp == 1 ? in.replica_costs : in.device_costs;
  const std::string memory = in.memory_unit == app::MemoryUnit::kBytes
                                 ? fmt::format("M_B {:.3f} M_W {:.3f} GB (device 0)",
                                               c.front().m_b / 1e9, c.front().m_w / 1e9)
                                 : fmt::format("M_B {} M_W {}", c.front().m_b, c.front().m_w);
  // With a cluster, transfers take the links' time for their bytes, not --comm.
  const std::string comm = in.network ? std::string("ms, comm by the cluster's links")
                                      : "comm " + ms_list(c, &sim::DeviceCosts::comm_ns) + " ms";
  return fmt::format("p={} m={} | F {} B {} W {} {} | {} | F&B overlap {}{}", in.params.pp,
                     in.params.microbatches, ms_list(c, &sim::DeviceCosts::f_ns),
                     ms_list(c, &sim::DeviceCosts::b_ns), ms_list(c, &sim::DeviceCosts::w_ns), comm,
                     memory, c.front().overlap_efficiency,
                     in.default_example
                         ? "\n(default example: the zero-bubble paper's 1.5B model as profiled "
                           "in its Tables 5 and 9)"
                     : in.model_description.empty() ? ""
                                                    : "\n" + in.model_description) +
         (in.profile_description.empty() ? "" : "\n" + in.profile_description) +
         (in.cluster_description.empty() ? "" : "\n" + in.cluster_description) +
         (in.input_rule == sim::InputRule::All
              ? ""
              : "\ntimed as the zero-bubble paper's evaluator: the inputs that wrap around from "
                "the last device to device 0 are awaited only by the first microbatch of each "
                "round of p (--paper-evaluator)") +
         (in.overheads == sim::OpOverheads{} && in.p2p == sim::P2pMode::Async
              ? ""
              : fmt::format("\nop overhead {} ms before every pass, p2p {}{}",
                            describe_op_overheads(in.overheads), p2p_name(in.p2p),
                            in.calibration.empty() ? "" : " (calibration " + in.calibration + ")"));
}

void write_simulate_table(std::ostream& out, const RunInputs& in, const RunSummary& run) {
  const sim::Metrics& m = run.metrics;
  fmt::print(out, "schedule {} | {}\n\n", label(run), describe_inputs(in));
  fmt::print(out, "iteration time     {:>12.3f} ms{}\n", sim::ns_to_ms(iteration_time_ns(run)),
             run.iteration ? " (pipeline, DP all-reduce and optimizer step)" : "");
  if (run.iteration) {
    const models::IterationTime& it = *run.iteration;
    fmt::print(out,
               "pipeline           {:>12.3f} ms (first op start to last op end, {} device(s))\n",
               sim::ns_to_ms(it.pipeline_ns), m.devices.size());
    fmt::print(out, "DP all-reduce      {:>12.3f} ms (longest stage, dp={}, {})\n",
               sim::ns_to_ms(it.dp_allreduce_ns), run.dp, run.allreduce);
    fmt::print(out, "optimizer step     {:>12.3f} ms (sync {}: {:.3f} ms)\n",
               sim::ns_to_ms(it.optimizer_ns), run.optimizer_sync, sim::ns_to_ms(it.sync_ns));
  }
  fmt::print(out, "max device span    {:>12.3f} ms\n", sim::ns_to_ms(m.max_device_span_ns));
  fmt::print(out, "bubble rate        {:>12.4f}\n", m.bubble_rate);
  fmt::print(out, "peak act. memory   {:>12.3f}{}\n", table_memory(run, m.peak_activation_memory),
             run.memory_unit == app::MemoryUnit::kBytes ? " GB" : "");
  if (!run.static_memory_bytes.empty()) {
    fmt::print(out, "peak memory        {:>12.2f} GB (static + activations, largest device)\n",
               max_peak_memory_bytes(run) / 1e9);
    fmt::print(out, "throughput         {:>12.2f} samples per GPU per second\n",
               samples_per_gpu_per_s(run));
    if (run.iteration) fmt::print(out, "MFU                {:>12.4f}\n", mfu(run));
  }
  for (const sim::DeviceMetrics& d : m.devices) {
    if (!run.capacity_bytes.empty() && over_capacity_bytes(run, d) > 0) {
      fmt::print(out, "OUT OF MEMORY      device {} ({}): {:.2f} GB over its {:.0f} GB\n", d.device,
                 run.device_gpus[static_cast<std::size_t>(d.device)],
                 over_capacity_bytes(run, d) / 1e9,
                 run.capacity_bytes[static_cast<std::size_t>(d.device)] / 1e9);
    }
  }
  fmt::print(out,
             "parameters/device  {:>12}  (1F1B with as many stages = 1x); {} of the model's "
             "parameters per device\n",
             fmt::format("{}x", run.parameters_per_device), model_share(run));
  if (run.exact) {
    const ExactSummary& e = *run.exact;
    if (e.proven_optimal) {
      fmt::print(
          out, "exact (ILP, CBC)   optimal in {:.1f} s: max span {:.3f} ms, heuristic {:.3f} ms\n",
          e.solve_s, e.span_ms, e.heuristic_ms);
    } else {
      fmt::print(out,
                 "exact (ILP, CBC)   stopped at the {:g} s limit after {:.1f} s: max span {:.3f} "
                 "ms (heuristic {:.3f} ms), best bound {:.3f} ms, gap {:.2f}%\n",
                 e.time_limit_s, e.solve_s, e.span_ms, e.heuristic_ms, e.bound_ms, 100 * e.gap);
    }
  }
  if (run.monte_carlo) {
    const MonteCarloSummary& mc = *run.monte_carlo;
    fmt::print(out,
               "\nMonte Carlo: {} runs, seed {}, each op's duration drawn from its stage's profile "
               "samples\n",
               mc.samples, mc.seed);
    fmt::print(out, "{:<18} {:>12} {:>12} {:>12} {:>12}\n", "", "mean", "p50", "p90", "p99");
    const Distribution& t = mc.iteration_time_ms;
    fmt::print(out, "{:<18} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}\n", "iteration time ms", t.mean,
               t.p50, t.p90, t.p99);
    const Distribution& b = mc.bubble_rate;
    fmt::print(out, "{:<18} {:>12.4f} {:>12.4f} {:>12.4f} {:>12.4f}\n", "bubble rate", b.mean,
               b.p50, b.p90, b.p99);
  }
  out << '\n';
  fmt::print(out, "{:>6}  {:>12}  {:>12}  {:>11}  {:>15}\n", "device", "span ms", "busy ms",
             "bubble rate", activation_header(run));
  for (const sim::DeviceMetrics& d : m.devices) {
    fmt::print(out, "{:>6}  {:>12.3f}  {:>12.3f}  {:>11.4f}  {:>15.3f}\n", d.device,
               sim::ns_to_ms(d.span_ns), sim::ns_to_ms(d.busy_ns), d.bubble_rate,
               table_memory(run, d.peak_activation_memory));
  }
}

void write_sweep_table(std::ostream& out, const RunInputs& in,
                       const std::vector<SweepPoint>& points) {
  fmt::print(out, "schedule {} | {}\n\n", label(points.front().run), describe_inputs(in));
  fmt::print(out, "{:>12}  {:>10}  {:>11}  {:>14}  {:>14}  {:>13}\n", "limit x pM_B", "limit",
             "bubble rate", "max span ms", "iteration ms", "peak act. mem");
  for (const SweepPoint& point : points) {
    const sim::Metrics& m = point.run.metrics;
    fmt::print(out, "{:>12.4g}  {:>10.4g}  {:>11.4f}  {:>14.3f}  {:>14.3f}  {:>13.3f}\n",
               point.limit_factor, point.run.params.mem_limit, m.bubble_rate,
               sim::ns_to_ms(m.max_device_span_ns), sim::ns_to_ms(m.iteration_time_ns),
               m.peak_activation_memory);
  }
}

void write_sweep_json(std::ostream& out, const std::vector<SweepPoint>& points) {
  with_writer(out, [&](Writer& w) {
    w.StartObject();
    put_run_head(w, points.front().run);
    w.Key("points");
    w.StartArray();
    for (const SweepPoint& point : points) {
      w.StartObject();
      put(w, "mem_limit_factor", point.limit_factor);
      put(w, "mem_limit", point.run.params.mem_limit);
      put(w, "schedule_mem_limit_factor", point.schedule_limit_factor);
      put_summary(w, point.run);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  });
}

void write_compare_table(std::ostream& out, const RunInputs& in,
                         const std::vector<RunSummary>& runs) {
  auto best = [&](auto value) {
    auto it = std::min_element(
        runs.begin(), runs.end(),
        [&](const RunSummary& a, const RunSummary& b) { return value(a) < value(b); });
    return value(*it);
  };
  auto iteration = [](const RunSummary& r) { return iteration_time_ns(r); };
  auto span = [](const RunSummary& r) { return r.metrics.max_device_span_ns; };
  auto bubble = [](const RunSummary& r) { return r.metrics.bubble_rate; };
  auto memory = [](const RunSummary& r) {
    return table_memory(r, r.metrics.peak_activation_memory);
  };
  const auto best_iteration = best(iteration);
  const auto best_span = best(span);
  const double best_bubble = best(bubble);
  const double best_memory = best(memory);
  auto mark = [](bool is_best) { return is_best ? " *" : "  "; };

  std::size_t width = 12;
  for (const RunSummary& r : runs)
    width = std::max(width, label(r).size());

  const bool bytes = in.memory_unit == app::MemoryUnit::kBytes;
  fmt::print(out, "{}\n\n", describe_inputs(in));
  fmt::print(out, "{:<{}}  {:>16}  {:>16}  {:>13}  {:>17}  {:>6}  {:>9}{}\n", "schedule", width,
             "iteration ms", "max span ms", "bubble rate", activation_header(runs.front()),
             "params", "model/dev", bytes ? "   peak GB  samples/GPU/s" : "");
  for (const RunSummary& r : runs) {
    std::string line = fmt::format(
        "{:<{}}  {:>14.3f}{}  {:>14.3f}{}  {:>11.4f}{}  {:>15.3f}{}  {:>6}  {:>9}", label(r), width,
        sim::ns_to_ms(iteration(r)), mark(iteration(r) == best_iteration), sim::ns_to_ms(span(r)),
        mark(span(r) == best_span), bubble(r), mark(bubble(r) == best_bubble), memory(r),
        mark(memory(r) == best_memory), fmt::format("{}x", r.parameters_per_device),
        model_share(r));
    if (bytes) {
      line += fmt::format("  {:>8.2f}  {:>13.2f}", max_peak_memory_bytes(r) / 1e9,
                          samples_per_gpu_per_s(r));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
  fmt::print(out,
             "\n* best in its column (lowest). iteration: first op start to last op end; max "
             "span: the longest\ndevice span (first op to last op on one device); bubble rate: "
             "1 - busy / (devices x max span);\nparams: parameters per device against a 1F1B "
             "device of a pipeline with as many stages per\nmicrobatch (DeepSeek's convention: "
             "the stages a device holds); model/dev: the share of the model's\nparameters each "
             "device holds.\n");
}

void write_profile_table(std::ostream& out, const traces::Profile& profile) {
  fmt::print(out,
             "{} kernels ({} NCCL), {:.3f} ms of kernel time; {} memcpy, {} memset; {} labelled "
             "ranges with GPU work, {}{}{} GPU ops outside them\n",
             profile.kernels, profile.comms.size(), sim::ns_to_ms(profile.total_kernel_ns),
             profile.memcpys, profile.memsets,
             profile.passes.size() - profile.cpu_timed_passes - profile.empty_passes,
             profile.empty_passes == 0
                 ? std::string()
                 : fmt::format("{} without any (passes that took no time), ", profile.empty_passes),
             profile.cpu_timed_passes == 0
                 ? std::string()
                 : fmt::format("{} timed on the CPU (no GPU work in their traces), ",
                               profile.cpu_timed_passes),
             profile.unattributed_gpu_ops);
  for (const traces::DeviceInfo& d : profile.devices) {
    fmt::print(out, "trace {} device {}: {}, {} kernels\n", d.trace, d.device,
               d.name.empty() ? "(no name in the trace)" : d.name, d.kernels);
  }
  fmt::print(out, "\n{:>5}  {:<4} {:>7} {:>16} {:>11} {:>11} {:>11} {:>14}\n", "stage", "pass",
             "count", "total kernel ms", "median ms", "p10 ms", "p90 ms", "median span ms");
  for (const traces::PassStats& p : traces::pass_stats(profile)) {
    fmt::print(out, "{:>5}  {:<4} {:>7} {:>16.3f} {:>11.3f} {:>11.3f} {:>11.3f} {:>14.3f}\n",
               p.stage == traces::kNoNumber ? std::string("-") : std::to_string(p.stage),
               sim::to_string(p.pass), p.kernel.count, p.kernel.total_ms, p.kernel.median_ms,
               p.kernel.p10_ms, p.kernel.p90_ms, p.span.median_ms);
  }
  if (profile.passes.empty()) {
    fmt::print(out,
               "(no labelled ranges: PyTorch pipelining's PP:<stage><F|I|W|B><mb>, or see "
               "--label-regex)\n");
  }
  const std::vector<traces::StageOverheads> overheads = traces::stage_overheads(profile);
  if (!overheads.empty()) {
    fmt::print(out,
               "\nGPU idle per stage: between consecutive passes when the device was not waiting "
               "for an input (launch and host overhead, simulate --profile's --op-overhead), and "
               "inside passes (span - kernel)\n{:>5}  {:>7} {:>14} {:>11} {:>11}  {:>7} {:>14}\n",
               "stage", "gaps", "median gap ms", "p10 ms", "p90 ms", "passes", "median in ms");
    for (const traces::StageOverheads& o : overheads) {
      fmt::print(out, "{:>5}  {:>7} {:>14.3f} {:>11.3f} {:>11.3f}  {:>7} {:>14.3f}\n",
                 o.stage == traces::kNoNumber ? std::string("-") : std::to_string(o.stage),
                 o.gap.count, o.gap.median_ms, o.gap.p10_ms, o.gap.p90_ms, o.inside.count,
                 o.inside.median_ms);
    }
  }
  fmt::print(out, "\n{:<15} {:>7} {:>12} {:>11} {:>16}\n", "NCCL collective", "count", "total ms",
             "median ms", "input bytes");
  if (profile.comms.empty()) fmt::print(out, "(no NCCL kernels)\n");
  for (const traces::CommStats& c : traces::comm_stats(profile)) {
    fmt::print(out, "{:<15} {:>7} {:>12.3f} {:>11.3f} {:>16}\n", traces::to_string(c.collective),
               c.duration.count, c.duration.total_ms, c.duration.median_ms,
               c.sized == 0 ? std::string("-") : std::to_string(c.in_bytes));
  }
}

void write_profile_json(std::ostream& out, const traces::Profile& profile) {
  with_writer(out, [&](Writer& w) {
    w.StartArray();
    for (const traces::PassStats& p : traces::pass_stats(profile)) {
      w.StartObject();
      w.Key("stage");
      p.stage == traces::kNoNumber ? w.Null() : w.Int(p.stage);
      const std::string_view pass = sim::to_string(p.pass);
      w.Key("pass");
      w.String(pass.data(), static_cast<rapidjson::SizeType>(pass.size()));
      put(w, "count", static_cast<int>(p.kernel.count));
      put(w, "total_kernel_ms", p.kernel.total_ms);
      put(w, "median_ms", p.kernel.median_ms);
      put(w, "p10_ms", p.kernel.p10_ms);
      put(w, "p90_ms", p.kernel.p90_ms);
      put(w, "median_span_ms", p.span.median_ms);
      w.EndObject();
    }
    w.EndArray();
  });
}

}  // namespace bubblesim::cli
