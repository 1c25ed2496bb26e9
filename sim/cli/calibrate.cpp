// `bubblesim calibrate RUNS.yaml --out CAL.yaml`: fits the per-pass overheads, the p2p mode and
// (for runs timed from a model's FLOPs) the efficiency to measured iteration times
// (docs/calibration.md).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>

#include "analysis/app/run.h"
#include "analysis/calibration.h"
#include "analysis/least_squares.h"
#include "analysis/study.h"
#include "models/transformer.h"
#include "sim/cli/commands.h"
#include "sim/schedules/builtin.h"

namespace bubblesim::cli {

namespace po = boost::program_options;

namespace {

constexpr double kMaxOverheadMs = 100;
constexpr double kMinEfficiency = 0.01;

// One run, read and its schedule generated once: a fit only re-simulates it. The schedule is
// built from the pass times as given, as the real run's scheduler saw them, and by default
// without the improver (a real run ran a published scheduler; --improve for bubblesim's).
struct Prepared {
  int line = 0;
  std::string label;  // "zb-2p p=8 m=24"
  app::Scenario in;
  sim::ScheduleParams params;
  sim::Schedule schedule;
  bool flop_timed = false;  // times from --model's FLOPs: their efficiency is fitted
  double base_efficiency = 0;
  std::vector<sim::DeviceCosts> device_costs, replica_costs;  // at base_efficiency, no overheads
  double measured_ms = 0;
};

// The fitted parameters: one overhead for all passes or one per kind (ms), then the
// efficiency when a run is FLOP-timed.
struct Layout {
  bool per_kind = false;
  bool efficiency = false;
  std::size_t size() const { return (per_kind ? 3 : 1) + (efficiency ? 1 : 0); }
};

sim::OpOverheads overheads_of(const Layout& layout, const std::vector<double>& x) {
  const auto ns = [](double ms) { return sim::ms_to_ns(ms); };
  if (!layout.per_kind) return {ns(x[0]), ns(x[0]), ns(x[0])};
  return {ns(x[0]), ns(x[1]), ns(x[2])};
}

// The iteration time of run `r` with parameters `x` and `mode`, in ms.
double predict_ms(const Prepared& r, const Layout& layout, const std::vector<double>& x,
                  sim::P2pMode mode) {
  app::Scenario in = r.in;
  in.overheads = overheads_of(layout, x);
  in.p2p = mode;
  const double scale = r.flop_timed && layout.efficiency ? r.base_efficiency / x.back() : 1.0;
  const auto apply = [&](const std::vector<sim::DeviceCosts>& base,
                         std::vector<sim::DeviceCosts>& costs) {
    for (std::size_t d = 0; d < costs.size(); ++d) {
      costs[d] = base[d];
      costs[d].overheads = in.overheads;
      if (scale == 1.0) continue;
      for (sim::TimeNs sim::DeviceCosts::*t :
           {&sim::DeviceCosts::f_ns, &sim::DeviceCosts::b_ns, &sim::DeviceCosts::w_ns}) {
        costs[d].*t =
            static_cast<sim::TimeNs>(std::llround(static_cast<double>(base[d].*t) * scale));
      }
    }
  };
  apply(r.device_costs, in.device_costs);
  apply(r.replica_costs, in.replica_costs);
  app::RunRequest request;
  request.name = r.label;
  request.params = r.params;
  sim::Schedule schedule = r.schedule;
  const RunSummary run = app::run(in, request, schedule);
  return sim::ns_to_ms(iteration_time_ns(run));
}

struct Fit {
  sim::P2pMode mode = sim::P2pMode::Async;
  std::vector<double> x;
  std::vector<double> errors;  // per run: predicted / measured - 1
  double cost = 0;
  int evaluations = 0;
};

std::vector<double> relative_errors(const std::vector<const Prepared*>& runs, const Layout& layout,
                                    const std::vector<double>& x, sim::P2pMode mode) {
  std::vector<double> e;
  for (const Prepared* r : runs)
    e.push_back(predict_ms(*r, layout, x, mode) / r->measured_ms - 1);
  return e;
}

Fit fit(const std::vector<const Prepared*>& runs, const Layout& layout, sim::P2pMode mode,
        std::vector<double> x0) {
  std::vector<double> lower(layout.size(), 0), upper(layout.size(), kMaxOverheadMs);
  if (layout.efficiency) {
    lower.back() = kMinEfficiency;
    upper.back() = 1;
  }
  const analysis::LeastSquaresResult r = analysis::fit_least_squares(
      [&](const std::vector<double>& x) { return relative_errors(runs, layout, x, mode); },
      std::move(x0), lower, upper);
  Fit f{mode, r.x, relative_errors(runs, layout, r.x, mode), r.cost, r.evaluations + 1};
  return f;
}

double mape(const std::vector<double>& errors) {
  double s = 0;
  for (const double e : errors)
    s += std::abs(e);
  return errors.empty() ? 0 : s / static_cast<double>(errors.size());
}

double worst(const std::vector<double>& errors) {
  double w = 0;
  for (const double e : errors)
    w = std::max(w, std::abs(e));
  return w;
}

// The settings that run `m` stands for; op-overhead, p2p and calibration are what calibrate
// fits, so a run may not give them.
app::ScenarioSettings run_settings(const analysis::MeasuredRuns& runs,
                                   const analysis::MeasuredRun& m) {
  for (const analysis::StudySetting& s : m.configuration.settings) {
    if (s.key == "op-overhead" || s.key == "p2p" || s.key == "calibration") {
      throw InvalidArgument(
          fmt::format("{}:{}: key '{}': calibrate fits it; leave it out of the runs", runs.path,
                      s.line, s.key));
    }
  }
  return app::settings_from_study(m.configuration);
}

// `improve`: the schedule as `simulate` gives it (the improver on); else the generator's own.
// A run's own setting `improve` wins.
Prepared prepare(const analysis::MeasuredRuns& runs, const analysis::MeasuredRun& m,
                 const sim::ScheduleRegistry& registry, bool improve) {
  Prepared r;
  r.line = m.line;
  const std::string schedule = m.configuration.find("schedule")->value;
  const auto where = [&](const std::string& what) {
    return fmt::format("{}:{}: run '{}': {}", runs.path, m.line, schedule, what);
  };
  try {
    const app::ScenarioSettings settings = run_settings(runs, m);
    r.in = app::make_scenario(settings);
    const sim::ScheduleGenerator& generator = registry.get(schedule);
    r.params = params_for(r.in, generator, true);
    if (m.configuration.find("improve") == nullptr) r.params.improve = improve;
    r.label = fmt::format("{} p={} m={}{}", schedule, r.params.pp, r.params.microbatches,
                          r.params.chunks > 1 ? fmt::format(" v={}", r.params.chunks) : "");
    r.schedule = app::generate_schedule(generator, r.params, r.in);
    const auto given = [&](const char* key) { return m.configuration.find(key) != nullptr; };
    r.flop_timed = given("model") && !given("f") && !given("b") && !given("w") &&
                   !given("profile") && !given("efficiency");
    r.base_efficiency = settings.efficiency.value_or(models::kDefaultEfficiency);
    r.device_costs = r.in.device_costs;
    r.replica_costs = r.in.replica_costs;
    if (m.measured_iteration_ms > 0) {
      r.measured_ms = m.measured_iteration_ms;
    } else {
      if (r.in.samples_per_microbatch <= 0) {
        throw InvalidArgument(
            "key 'measured_samples_per_gpu_per_s': needs a model (its microbatch size); give "
            "model or measured_iteration_ms");
      }
      // Samples per GPU per iteration over the measured rate: m b dp / (p dp) / rate.
      r.measured_ms = 1e3 * r.params.microbatches * r.in.samples_per_microbatch /
                      (r.params.pp * m.measured_samples_per_gpu_per_s);
    }
    // A run that cannot simulate fails here, before any fit.
    (void)predict_ms(r, Layout{}, {0.0}, sim::P2pMode::Async);
  } catch (const po::error& e) {
    throw InvalidArgument(where(e.what()));
  } catch (const Error& e) {
    throw InvalidArgument(where(e.what()));
  }
  return r;
}

}  // namespace

int cmd_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("runs", po::value<std::string>(), "RUNS.yaml: the measured runs (docs/calibration.md)")
    ("out", po::value<std::string>(), "CAL.yaml to write (for --calibration)")
    ("p2p", po::value<std::string>()->default_value("fit"),
     "fit: fit with async and with blocking transfers and keep the better; async or blocking: "
     "only that mode")
    ("per-kind", po::bool_switch(), "fit one overhead per pass kind (F, B, W) instead of one for all")
    ("no-loo", po::bool_switch(), "skip the leave-one-out check (one fit per run)")
    ("improve", po::bool_switch(),
     "fit to bubblesim's improved schedules (as simulate runs them by default) instead of the "
     "generators' own, which model the measured runs' published schedulers more closely; for "
     "runs that executed schedules bubblesim wrote (a run's own setting 'improve' wins)");
  // clang-format on
  po::variables_map vm;
  if (!parse_command(args, desc, vm, out,
                     "usage: bubblesim calibrate RUNS.yaml --out CAL.yaml [options]\n\n"
                     "Fits the op overheads, the p2p mode and (for runs timed from a model's "
                     "FLOPs) the efficiency\nto measured iteration times by least squares on the "
                     "relative error.",
                     "runs")) {
    return 0;
  }
  if (vm.count("runs") == 0) throw InvalidArgument("missing RUNS.yaml (see --help)");
  if (vm.count("out") == 0 || vm["out"].as<std::string>().empty()) {
    throw InvalidArgument("option --out: expected the CAL.yaml to write");
  }
  const std::string out_path = vm["out"].as<std::string>();
  const std::string p2p = vm["p2p"].as<std::string>();
  std::vector<sim::P2pMode> modes;
  if (p2p == "fit") {
    modes = {sim::P2pMode::Async, sim::P2pMode::Blocking};
  } else {
    modes = {parse_p2p("p2p", p2p)};
  }
  const auto started = std::chrono::steady_clock::now();
  const analysis::MeasuredRuns runs = analysis::load_measured_runs(vm["runs"].as<std::string>());
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  std::vector<Prepared> prepared;
  for (const analysis::MeasuredRun& m : runs.runs)
    prepared.push_back(prepare(runs, m, registry, vm["improve"].as<bool>()));

  // The network engine times transfers by their bytes and has no blocking mode.
  std::string network_note;
  for (const Prepared& r : prepared) {
    if (!r.in.network) continue;
    if (p2p == "blocking") {
      throw InvalidArgument(fmt::format(
          "{}:{}: key 'cluster': blocking transfers cannot be timed over a cluster's network; "
          "give comm instead, or --p2p async",
          runs.path, r.line));
    }
    if (modes.size() > 1) {
      modes = {sim::P2pMode::Async};
      network_note = fmt::format(
          "note: the run on line {} crosses a cluster's network, where transfers cannot block: "
          "fitted with async transfers only\n",
          r.line);
    }
  }
  Layout layout;
  layout.per_kind = vm["per-kind"].as<bool>();
  for (const Prepared& r : prepared)
    layout.efficiency = layout.efficiency || r.flop_timed;
  if (prepared.size() <= layout.size()) {
    throw InvalidArgument(
        fmt::format("{}:{}: key 'runs': {} run(s) for {} fitted parameter(s) ({}): give at "
                    "least {} runs",
                    runs.path, runs.runs_line, prepared.size(), layout.size(),
                    std::string(layout.per_kind ? "overheads of F, B, W" : "op overhead") +
                        (layout.efficiency ? ", efficiency" : ""),
                    layout.size() + 1));
  }
  std::vector<const Prepared*> all;
  for (const Prepared& r : prepared)
    all.push_back(&r);
  std::vector<double> x0(layout.size(), 0.5);
  if (layout.efficiency) {
    double base = 0;
    for (const Prepared& r : prepared)
      base = std::max(base, r.flop_timed ? r.base_efficiency : 0.0);
    x0.back() = base;
  }
  const std::vector<double> zero_x = [&] {
    std::vector<double> x = x0;
    for (std::size_t j = 0; j < (layout.per_kind ? 3u : 1u); ++j)
      x[j] = 0;
    return x;
  }();
  const std::vector<double> before = relative_errors(all, layout, zero_x, sim::P2pMode::Async);
  std::vector<Fit> fits;
  for (const sim::P2pMode mode : modes)
    fits.push_back(fit(all, layout, mode, x0));
  const Fit* best = &fits.front();
  for (const Fit& f : fits) {
    if (f.cost < best->cost) best = &f;
  }
  int evaluations = 0;
  for (const Fit& f : fits)
    evaluations += f.evaluations;
  // Leave one out: each run predicted by the fit (same p2p mode) to the others.
  std::vector<double> loo;
  if (!vm["no-loo"].as<bool>()) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      std::vector<const Prepared*> others = all;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
      const Fit f = fit(others, layout, best->mode, best->x);
      evaluations += f.evaluations;
      loo.push_back(predict_ms(*all[i], layout, f.x, best->mode) / all[i]->measured_ms - 1);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  fmt::print(out, "calibration of {} measured run(s) from {}\n{}\n", all.size(), runs.path,
             network_note);
  fmt::print(out, "{:>4}  {:<22} {:>12}  {:>12} {:>8}  {:>12} {:>8}{}\n", "line", "run",
             "measured ms", "before ms", "error", "after ms", "error",
             loo.empty() ? "" : "  loo error");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Prepared& r = *all[i];
    fmt::print(out, "{:>4}  {:<22} {:>12.2f}  {:>12.2f} {:>+7.2f}%  {:>12.2f} {:>+7.2f}%{}\n",
               r.line, r.label, r.measured_ms, r.measured_ms * (1 + before[i]), 100 * before[i],
               r.measured_ms * (1 + best->errors[i]), 100 * best->errors[i],
               loo.empty() ? "" : fmt::format("  {:>+8.2f}%", 100 * loo[i]));
  }
  fmt::print(out, "\nbefore (no overheads, async): MAPE {:.2f}%, worst {:.2f}%\n",
             100 * mape(before), 100 * worst(before));
  for (const Fit& f : fits) {
    fmt::print(out, "fit with p2p {:<8}: MAPE {:.2f}%, worst {:.2f}%, op overhead {} ms{}{}\n",
               p2p_name(f.mode), 100 * mape(f.errors), 100 * worst(f.errors),
               describe_op_overheads(overheads_of(layout, f.x)),
               layout.efficiency ? fmt::format(", efficiency {:.4f}", f.x.back()) : "",
               &f == best ? "  <- kept" : "");
  }
  if (!loo.empty()) {
    fmt::print(out,
               "leave-one-out MAPE {:.2f}%, worst {:.2f}% (each run predicted by a fit to "
               "the others)\n",
               100 * mape(loo), 100 * worst(loo));
  }
  fmt::print(out, "{} simulations in {:.2f} s; wrote {}\n", evaluations * all.size(), seconds,
             out_path);
  (void)err;

  analysis::Calibration c;
  c.overheads = overheads_of(layout, best->x);
  c.p2p = best->mode;
  c.efficiency = layout.efficiency ? best->x.back() : 0;
  c.runs = runs.path;
  c.num_runs = static_cast<int>(all.size());
  c.mape = mape(best->errors);
  c.worst = worst(best->errors);
  c.loo_mape = loo.empty() ? 0 : mape(loo);
  analysis::write_calibration(out_path, c);
  return 0;
}

}  // namespace bubblesim::cli
