#include "analysis/app/scenario.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "analysis/calibration.h"
#include "analysis/profile_file.h"
#include "models/cluster.h"
#include "models/transformer.h"
#include "traces/profile_costs.h"
#include "traces/statistics.h"

namespace bubblesim::analysis::app {

namespace {

double non_negative(const char* name, double value) {
  if (!std::isfinite(value) || value < 0) {
    throw SettingError(name, "expected a finite number >= 0, got " + std::to_string(value));
  }
  return value;
}

// The settings' model (read from its file, or given) and GPU.
bool has_model(const ScenarioSettings& s) {
  return s.model || s.transformer;
}
models::TransformerConfig model_of(const ScenarioSettings& s) {
  return s.transformer ? *s.transformer : models::load_transformer(*s.model);
}
models::GpuSpec gpu_of(const ScenarioSettings& s) {
  return s.gpu_spec ? *s.gpu_spec : models::find_gpu(s.gpu.value_or(kDefaultGpu));
}

// --model: times from the model's FLOPs where --f/--b/--w were left at their defaults, memory
// in bytes where --m-b/--m-w were, and the static memory of every device.
// `calibrated`: the efficiency of --calibration when --efficiency is not given, else 0.
void apply_model(const ScenarioSettings& s, Scenario& in, std::vector<sim::TimeNs>& f,
                 std::vector<sim::TimeNs>& b, std::vector<sim::TimeNs>& w, std::vector<double>& m_b,
                 std::vector<double>& m_w, double calibrated) {
  const models::TransformerConfig model = model_of(s);
  const models::GpuSpec gpu = gpu_of(s);
  const double efficiency =
      calibrated > 0 ? calibrated : s.efficiency.value_or(models::kDefaultEfficiency);
  if (!(efficiency > 0 && efficiency <= 1)) {
    throw SettingError("efficiency",
                       "expected a fraction in (0, 1], got " + format_number(efficiency));
  }
  const std::vector<models::StageEstimate> stages = models::estimate_stages(model, in.params.pp);
  auto time = [&](double flops) {
    return sim::derived_ms_to_ns(models::flops_to_ms(flops, gpu, efficiency),
                                 "model " + (s.model ? *s.model : model.name) + " on " + gpu.name +
                                     " at efficiency " + format_number(efficiency));
  };
  for (std::size_t d = 0; d < stages.size(); ++d) {
    if (!s.f_ms) f[d] = time(stages[d].f_flops);
    if (!s.b_ms) b[d] = time(stages[d].b_flops);
    if (!s.w_ms) w[d] = time(stages[d].w_flops);
    if (!s.m_b) m_b[d] = stages[d].m_b_bytes;
    if (!s.m_w) m_w[d] = stages[d].m_w_bytes;
    in.static_memory_bytes.push_back(stages[d].static_bytes);
    in.parameters.push_back(stages[d].parameters);
    in.flops_per_microbatch += stages[d].f_flops + stages[d].b_flops + stages[d].w_flops;
  }
  in.gpu = gpu.name;
  in.model_transfer_bytes = stages.front().transfer_bytes;
  const bool measured = s.f_ms || s.b_ms || s.w_ms || s.profile;
  in.model_description = fmt::format(
      "model {} on {} ({} GB): {} times, memory in bytes (static: 16 bytes per parameter)",
      model.name, gpu.name, gpu.memory_gb,
      measured ? "measured" : fmt::format("FLOP-based (efficiency {})", efficiency));
  in.samples_per_microbatch = model.microbatch_size;
  in.memory_unit = MemoryUnit::kBytes;
  in.default_example = false;
}

// --profile: the times each device's stage took in the profile, where --f/--b/--w/--comm were
// left at their defaults; the samples for --samples.
void apply_profile(const ScenarioSettings& s, Scenario& in, const traces::Profile& profile,
                   std::vector<sim::TimeNs>& f, std::vector<sim::TimeNs>& b,
                   std::vector<sim::TimeNs>& w, std::vector<sim::TimeNs>& comm) {
  std::string split_note;
  double b_share = 0.5;
  if (has_model(s)) {
    const models::TransformerConfig model = model_of(s);
    b_share = models::backward_b_share(model);
    split_note = fmt::format("B : W = {:.4f} : {:.4f}, the FLOP ratio of a layer of model {}",
                             b_share, 1 - b_share, model.name);
  } else {
    split_note =
        "B : W = 1 : 1, the FLOP ratio (24h + 8s) : 24h for s << h (give a model for its h "
        "and s)";
  }
  traces::ProfileCosts costs;
  try {
    costs = traces::profile_costs(profile, in.params.pp, b_share);
  } catch (const InvalidArgument& e) {
    throw SettingError("profile", "" + in.profile + ": " + e.what());
  }
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  std::string split_stages;
  for (std::size_t d = 0; d < costs.stages.size(); ++d) {
    const traces::StageSamples& st = costs.stages[d];
    if (!s.f_ms) f[d] = traces::median_ns(st.f_ns);
    if (!s.b_ms) b[d] = traces::median_ns(st.b_ns);
    if (!s.w_ms) w[d] = traces::median_ns(st.w_ns);
    fewest = std::min({fewest, st.f_ns.size(), st.b_ns.size(), st.w_ns.size()});
    if (st.split_from_bw) split_stages += (split_stages.empty() ? "" : ",") + std::to_string(d);
    // --samples draws from the profile's samples, except for the times given explicitly.
    in.device_samples.push_back({!s.f_ms ? st.f_ns : std::vector{f[d]},
                                 !s.b_ms ? st.b_ns : std::vector{b[d]},
                                 !s.w_ms ? st.w_ns : std::vector{w[d]}});
  }
  std::string comm_source;
  if (!costs.comm_ns.empty() && !s.comm_ms) {
    std::fill(comm.begin(), comm.end(), traces::median_ns(costs.comm_ns));
    comm_source = fmt::format("median of its {} send/recv kernels", costs.comm_ns.size());
  } else if (s.comm_ms) {
    comm_source = "the comm setting (given)";
  } else {
    comm_source = "the comm setting (default; the profile has no send/recv kernels)";
  }
  const bool given = s.f_ms || s.b_ms || s.w_ms;
  in.profile_description = fmt::format(
      "profile {}: F, B, W per stage = median kernel time of its samples (at least {} per "
      "stage and pass){}; comm = {}",
      in.profile, fewest, given ? ", except the f, b, w given" : "", comm_source);
  // The launch and host overhead between passes, unless --op-overhead or --calibration gave one.
  if (!s.op_overhead && in.calibration.empty()) {
    const sim::TimeNs gap = traces::median_gap_ns(profile);
    if (gap > 0) {
      in.overheads = {gap, gap, gap};
      in.profile_description += fmt::format(
          "; op overhead = {:.3f} ms, the median GPU idle gap between consecutive passes of a "
          "stage when the device was not waiting for an input (an op-overhead setting overrides "
          "it)",
          sim::ns_to_ms(gap));
    }
  }
  if (!split_stages.empty()) {
    in.profile_description +=
        fmt::format("\nnote: stages {} ran a fused backward (BW) only; each BW sample was split {}",
                    split_stages, split_note);
  }
  in.default_example = false;
}

// --max-memory: refuses a run whose estimate (estimated_run_bytes) exceeds the limit, before
// anything big is built.
void check_memory_estimate(const ScenarioSettings& s, const Scenario& in) {
  double limit = default_max_memory_bytes();
  std::string source = "80% of this machine's memory";
  if (s.max_memory_gb) {
    const double gb = *s.max_memory_gb;
    if (!(gb > 0 && gb <= 1e9)) {
      throw SettingError("max-memory", "expected GB > 0, got " + format_number(gb));
    }
    limit = gb * 1e9;
    source = "max-memory";
  }
  const int dp = std::clamp(s.dp.value_or(1), 1, 4096);  // checked with its message later
  const double need = estimated_run_bytes(in.params, in.chunks_given, dp, s.keep_record);
  if (need > limit) {
    const double ops = need / (kSimulationBytesPerOp + (s.keep_record ? kRecordBytesPerOp : 0));
    throw SettingError(
        "max-memory",
        fmt::format(
            "this run needs about {:.4g} GB ({:.0f} ops at about {:.0f} bytes "
            "each), more than the limit of {:.4g} GB ({}); give a larger max-memory or fewer "
            "devices or microbatches",
            need / 1e9, ops, need / ops, limit / 1e9, source));
  }
}

// --cluster, --dp, --allreduce, --optimizer-sync: the logical devices' costs, the network and
// what finishes the iteration (Scenario::replicated).
void apply_cluster(const ScenarioSettings& s, Scenario& in, bool from_file) {
  const std::string sync = s.optimizer_sync.value_or("none");
  const std::string algorithm = s.allreduce.value_or("ring");
  in.dp = s.dp.value_or(1);
  if (in.dp < 1 || in.dp > 4096) {
    throw SettingError("dp", "expected 1 to 4096 replicas, got " + std::to_string(in.dp));
  }
  if (algorithm != "ring" && algorithm != "tree") {
    throw SettingError("allreduce", "expected ring or tree, got '" + algorithm + "'");
  }
  in.allreduce_name = algorithm;
  in.iteration.algorithm =
      algorithm == "ring" ? models::AllReduceAlgorithm::Ring : models::AllReduceAlgorithm::Tree;
  if (sync == "none") {
    in.iteration.sync = models::OptimizerSync::None;
  } else if (sync == "allreduce") {
    in.iteration.sync = models::OptimizerSync::AllReduce;
  } else if (sync == "post-validation") {
    in.iteration.sync = models::OptimizerSync::PostValidation;
  } else {
    throw SettingError("optimizer-sync",
                       "expected none, allreduce or post-validation, got '" + sync + "'");
  }
  in.optimizer_sync_name = sync;
  const bool has_cluster = s.cluster.has_value();
  in.replicated = has_cluster || in.dp > 1 || in.iteration.sync != models::OptimizerSync::None;
  if (in.replicated && in.input_rule != sim::InputRule::All) {
    throw SettingError("paper-evaluator", "cannot be combined with cluster, dp or optimizer-sync");
  }
  const bool model = has_model(s);
  for (const auto& [name, given] : {std::pair{"optimizer-ms", s.optimizer_ms.has_value()},
                                    std::pair{"comm-bytes", s.comm_bytes.has_value()},
                                    std::pair{"grad-bytes", s.grad_bytes.has_value()}}) {
    if (given && !in.replicated) {
      throw SettingError(name, "applies only with cluster, dp or optimizer-sync");
    }
  }
  if (!in.replicated) return;
  if (from_file && in.dp > 1) {
    throw SettingError("dp", "cannot be combined with a schedule file");
  }
  if (in.dp > 1 && !has_cluster) {
    throw SettingError("dp", "the replicas' all-reduce needs the links of a cluster");
  }
  const int p = in.params.pp;
  const std::size_t logical = static_cast<std::size_t>(p) * static_cast<std::size_t>(in.dp);
  const models::GpuSpec reference = gpu_of(s);
  std::vector<models::GpuSpec> gpus(logical, reference);
  std::vector<double> time_factor(logical, 1.0);
  models::Cluster cluster;
  if (has_cluster) {
    in.cluster_path = *s.cluster;
    if (s.comm_ms) {
      throw SettingError("comm",
                         "with a cluster, its links time the transfers "
                         "(give comm-bytes for their size)");
    }
    cluster = models::load_cluster(in.cluster_path);
    in.physical_device = models::place(cluster, p, in.dp);
    for (std::size_t l = 0; l < logical; ++l) {
      const auto phys = static_cast<std::size_t>(in.physical_device[l]);
      gpus[l] = cluster.gpus[phys];
      time_factor[l] = cluster.time_factor[phys];
    }
    in.network = models::build_network(cluster, in.physical_device);
  }
  double comm_bytes = 0;
  if (s.comm_bytes) {
    comm_bytes = *s.comm_bytes;
    if (!(comm_bytes >= 0 && comm_bytes <= 1e15)) {
      throw SettingError("comm-bytes",
                         "expected 0 to 1e15 bytes, got " + format_number(comm_bytes));
    }
  } else if (model) {
    comm_bytes = in.model_transfer_bytes;
  } else if (has_cluster) {
    throw SettingError("cluster", "the size of the transfers is unknown; give comm-bytes or model");
  }
  std::vector<double> grad_bytes(static_cast<std::size_t>(p), 0);
  if (s.grad_bytes) {
    const double g = *s.grad_bytes;
    if (!(g >= 0 && g <= 1e15)) {
      throw SettingError("grad-bytes", "expected 0 to 1e15 bytes, got " + format_number(g));
    }
    std::fill(grad_bytes.begin(), grad_bytes.end(), g);
  } else if (model) {
    for (int d = 0; d < p; ++d)
      grad_bytes[static_cast<std::size_t>(d)] = 2 * in.parameters[static_cast<std::size_t>(d)];
  } else if (in.dp > 1) {
    throw SettingError("dp", "the gradients' size is unknown; give grad-bytes or model");
  }
  double optimizer_ms = -1;
  if (s.optimizer_ms) {
    optimizer_ms = *s.optimizer_ms;
    if (!(optimizer_ms >= 0 && optimizer_ms <= 1e9)) {
      throw SettingError("optimizer-ms",
                         "expected 0 to 1e9 ms, got " + format_number(optimizer_ms));
    }
  }
  // Each logical device: its pipeline device's costs (for --gpu), its durations scaled by
  // --gpu's peak over its own GPU's and by its time factor (slowdown / speed factor).
  in.replica_costs.clear();
  in.device_gpus.clear();
  std::vector<double> static_bytes;
  for (std::size_t l = 0; l < logical; ++l) {
    const std::size_t d = l % static_cast<std::size_t>(p);
    sim::DeviceCosts c = in.device_costs[d];
    const double factor = reference.dense_bf16_tflops / gpus[l].dense_bf16_tflops * time_factor[l];
    if (factor != 1.0) {
      for (sim::TimeNs* t : {&c.f_ns, &c.b_ns, &c.w_ns}) {
        *t = sim::derived_ms_to_ns(sim::ns_to_ms(*t) * factor,
                                   (has_cluster ? "cluster " + in.cluster_path : "gpu " + in.gpu) +
                                       ": device " + std::to_string(l) + " (" + gpus[l].name +
                                       ", time factor " + format_number(time_factor[l]) + ")");
      }
    }
    c.comm_bytes = comm_bytes;
    in.replica_costs.push_back(c);
    in.device_gpus.push_back(gpus[l].name);
    in.peak_flops_total += gpus[l].dense_bf16_tflops * 1e12;
    if (model) {
      in.capacity_bytes.push_back(gpus[l].memory_gb * 1e9);
      static_bytes.push_back(in.static_memory_bytes[d]);
    }
    sim::TimeNs step = 0;
    if (optimizer_ms >= 0) {
      step = sim::ms_to_ns(optimizer_ms);
    } else if (model) {
      step = sim::derived_ms_to_ns(in.parameters[d] * models::kAdamStepBytesPerParameter /
                                       (gpus[l].memory_bandwidth_gbps * 1e9) * 1e3 * time_factor[l],
                                   "the optimizer step of device " + std::to_string(l));
    }
    in.iteration.optimizer_ns.push_back(step);
  }
  if (model) in.static_memory_bytes = static_bytes;
  // The generators' estimate of a hop: the uncontended time to the device's pipeline
  // neighbours over the cluster's links.
  if (in.network) {
    for (std::size_t l = 0; l < logical; ++l) {
      const int self = static_cast<int>(l), d = self % p;
      sim::TimeNs hop = 0;
      for (const int n : {d - 1, d + 1}) {
        if (n < 0 || n >= p) continue;
        hop = std::max(hop, in.network->uncontended_ns(self, self - d + n, comm_bytes));
      }
      in.replica_costs[l].comm_ns = hop;
    }
  }
  in.iteration.pp = p;
  in.iteration.dp = in.dp;
  in.iteration.grad_bytes = grad_bytes;
  // OptimizerSync::AllReduce: a small (8-byte) tree all-reduce over every device, its latency
  // the cluster's links, or one --comm hop without a cluster.
  if (in.network) {
    std::vector<int> all(logical);
    for (std::size_t l = 0; l < logical; ++l)
      all[l] = static_cast<int>(l);
    in.iteration.sync_ns =
        models::allreduce_ns(*in.network, all, 8, models::AllReduceAlgorithm::Tree);
  } else {
    sim::TimeNs hop = 0;
    for (const sim::DeviceCosts& c : in.device_costs)
      hop = std::max(hop, c.comm_ns);
    in.iteration.sync_ns = models::tree_allreduce_ns(static_cast<int>(logical), 8,
                                                     std::numeric_limits<double>::infinity(), hop);
  }
  if (has_cluster) {
    std::string kinds;
    for (std::size_t l = 0; l < logical; ++l) {
      if (kinds.find(gpus[l].name) == std::string::npos)
        kinds += (kinds.empty() ? "" : ", ") + gpus[l].name;
    }
    in.cluster_description = fmt::format(
        "cluster {} ({}): {} replica(s) x {} devices on {}, {} {} GB/s {} us inside nodes, {} {} "
        "GB/s {} us between; {} bytes per transfer",
        cluster.name, in.cluster_path, in.dp, p, kinds, cluster.intra_node.type,
        cluster.intra_node.bandwidth_gb_per_s, cluster.intra_node.latency_us,
        cluster.inter_node.type, cluster.inter_node.bandwidth_gb_per_s,
        cluster.inter_node.latency_us, comm_bytes);
  }
  in.default_example = false;
}

// The file's value of setting `flag`, which the user may repeat but not contradict.
int from_schedule(const std::optional<int>& given, const char* setting, int value,
                  const std::string& what) {
  if (given && *given != value) {
    throw SettingError(setting, std::to_string(*given) + " given, but the schedule file has " +
                                    std::to_string(value) + " " + what);
  }
  return value;
}

// p, m and v of a scenario: the settings', or the schedule file's.
void set_sizes(const ScenarioSettings& s, const ScheduleFileInput& file, Scenario& in) {
  in.params.pp = s.pp.value_or(DefaultExample::kPp);
  in.params.microbatches = s.microbatches.value_or(DefaultExample::kMicrobatches);
  in.params.chunks = s.chunks.value_or(1);
  in.chunks_given = s.chunks.has_value();
  if (file.schedule == nullptr) return;
  // A chunk pass costs 1/v of a device's share of one microbatch's work: v is the stages a
  // microbatch runs per device (stages per device, or half of them with two directions).
  const sim::Schedule& schedule = *file.schedule;
  const int devices = schedule.num_devices();
  if (schedule.num_stages() % devices != 0 || schedule.route_stages() % devices != 0) {
    throw InvalidArgument(file.path + ": the schedule file's " +
                          std::to_string(schedule.num_stages()) +
                          " stages are not spread evenly over its " + std::to_string(devices) +
                          " ranks, so the f, b and w times cannot be split into chunks");
  }
  in.params.pp = from_schedule(s.pp, "pp", devices, "ranks");
  in.params.microbatches =
      from_schedule(s.microbatches, "microbatches", schedule.num_microbatches, "microbatches");
  in.params.chunks = from_schedule(s.chunks, "chunks", schedule.route_stages() / devices,
                                   "stages per rank on each microbatch's route");
  in.chunks_given = true;
}

std::vector<double> default_ms(const char* text) {
  return {std::strtod(text, nullptr)};
}

}  // namespace

Scenario make_scenario(const ScenarioSettings& s, const ScheduleFileInput& file) {
  Scenario in;
  const bool from_file = file.schedule != nullptr;
  set_sizes(s, file, in);
  in.default_example =
      !from_file && !s.pp && !s.microbatches && !s.f_ms && !s.b_ms && !s.w_ms && !s.comm_ms;
  traces::Profile profile;
  if (s.profile) {
    in.profile = *s.profile;
    if (in.profile.empty()) throw SettingError("profile", "expected a file name");
    if (from_file) {
      throw SettingError("profile", "cannot be combined with a schedule file (yet)");
    }
    profile = analysis::read_profile(in.profile);
    if (!s.pp) {
      // The profile's stage count, checked (and named in errors) by profile_costs.
      int stages = 0;
      for (const traces::PassSample& sample : profile.passes)
        stages = std::max(stages, sample.label.stage + 1);
      if (stages > 0) in.params.pp = stages;
    }
  }
  sim::require_pipeline(in.params);
  check_memory_estimate(s, in);

  const int p = in.params.pp;
  auto f = times_for_devices("f", s.f_ms.value_or(default_ms(DefaultExample::kF)), p);
  auto b = times_for_devices("b", s.b_ms.value_or(default_ms(DefaultExample::kB)), p);
  auto w = times_for_devices("w", s.w_ms.value_or(default_ms(DefaultExample::kW)), p);
  auto comm = times_for_devices("comm", s.comm_ms.value_or(default_ms(DefaultExample::kComm)), p);
  const double m_b = non_negative("m-b", s.m_b.value_or(1.0));
  const double m_w = non_negative("m-w", s.m_w.value_or(0.5));
  in.params.improve = !s.no_improve;
  in.mem_limit = s.mem_limit.value_or(0);
  in.mem_limit_given = s.mem_limit.has_value();
  // 0 stands for the default (p*M_B) inside; given explicitly it is a mistake, not a request.
  if (std::isnan(in.mem_limit) || in.mem_limit < 0 || (in.mem_limit_given && in.mem_limit == 0)) {
    throw SettingError("mem-limit", "expected a number > 0 or inf, got " +
                                        format_number(in.mem_limit) +
                                        " (leave it out for the default, p*M_B)");
  }
  if (s.paper_evaluator) in.input_rule = sim::InputRule::PaperEvaluator;
  const double overlap = s.overlap_efficiency.value_or(0);
  if (!(overlap >= 0 && overlap <= 1)) {
    throw SettingError("overlap-efficiency",
                       fmt::format("expected a number from 0 to 1, got {}", overlap));
  }

  std::vector<double> m_bs(static_cast<std::size_t>(p), m_b), m_ws(m_bs.size(), m_w);
  std::optional<analysis::Calibration> calibration;
  if (s.calibration) {
    in.calibration = *s.calibration;
    if (in.calibration.empty()) throw SettingError("calibration", "expected a file name");
    calibration = analysis::load_calibration(in.calibration);
  }
  if (s.op_overhead) {
    in.overheads = *s.op_overhead;
  } else if (calibration) {
    in.overheads = calibration->overheads;
  }
  if (s.p2p) {
    in.p2p = *s.p2p;
  } else if (calibration) {
    in.p2p = calibration->p2p;
  }
  if (has_model(s)) {
    apply_model(s, in, f, b, w, m_bs, m_ws,
                calibration && !s.efficiency ? calibration->efficiency : 0);
  } else if (s.efficiency) {  // without a model they change nothing: a mistake, not a request
    throw SettingError("efficiency", "applies only with model (its FLOP-based times)");
  } else if (s.gpu && !s.cluster) {
    throw SettingError("gpu", "applies only with model or cluster");
  }
  if (!in.profile.empty()) apply_profile(s, in, profile, f, b, w, comm);

  // The iteration cannot outlast all ops and transfers in a row: p m (T_F + T_B + T_W) plus
  // at most 2 p v m hops, with v <= 1024. Keep that far from the int64 clock's limit.
  long double worst = 0;
  for (int d = 0; d < p; ++d) {
    const auto i = static_cast<std::size_t>(d);
    in.device_costs.push_back(
        sim::DeviceCosts{f[i], b[i], w[i], comm[i], m_bs[i], m_ws[i], overlap, 0, in.overheads});
    worst = std::max(worst, static_cast<long double>(f[i] + b[i] + w[i]) + 2048.0L * comm[i]);
  }
  if (worst * p * in.params.microbatches >
      static_cast<long double>(std::numeric_limits<sim::TimeNs>::max() / 4)) {
    throw InvalidArgument(
        "the times f, b, w and comm with pp and microbatches: the iteration could last more than "
        "70 "
        "years of "
        "simulated time; use smaller times or fewer microbatches");
  }
  apply_cluster(s, in, from_file);
  if (in.network && in.p2p != sim::P2pMode::Async) {
    throw SettingError("p2p",
                       "blocking transfers cannot be timed over a cluster's network; give comm "
                       "(the time of one hop) instead");
  }
  return in;
}

namespace {

// A study value that does not parse as the setting's type, in the words Boost.Program_options
// used when studies were parsed as options.
[[noreturn]] void invalid_value(const StudySetting& setting) {
  throw SettingError(setting.key, "'" + setting.value + "' is not a valid value");
}

int whole_value(const StudySetting& setting) {
  int value = 0;
  const std::string& t = setting.value;
  const char* begin = t.data() + (!t.empty() && t[0] == '+' ? 1 : 0);
  const auto [end, error] = std::from_chars(begin, t.data() + t.size(), value);
  if (t.empty() || error != std::errc() || end != t.data() + t.size()) invalid_value(setting);
  return value;
}

double number_value(const StudySetting& setting) {
  const char* begin = setting.value.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (setting.value.empty() || end != begin + setting.value.size()) invalid_value(setting);
  return value;
}

// How each study key sets its setting (analysis/study.h lists the keys; schedule is none).
struct StudyKey {
  const char* key;
  void (*apply)(ScenarioSettings& s, const StudySetting& v);
};

// clang-format off
constexpr StudyKey kStudyKeys[] = {
  {"pp", [](ScenarioSettings& s, const StudySetting& v) { s.pp = whole_value(v); }},
  {"microbatches", [](ScenarioSettings& s, const StudySetting& v) { s.microbatches = whole_value(v); }},
  {"chunks", [](ScenarioSettings& s, const StudySetting& v) { s.chunks = whole_value(v); }},
  {"f", [](ScenarioSettings& s, const StudySetting& v) { s.f_ms = parse_ms_list("f", v.value); }},
  {"b", [](ScenarioSettings& s, const StudySetting& v) { s.b_ms = parse_ms_list("b", v.value); }},
  {"w", [](ScenarioSettings& s, const StudySetting& v) { s.w_ms = parse_ms_list("w", v.value); }},
  {"comm", [](ScenarioSettings& s, const StudySetting& v) { s.comm_ms = parse_ms_list("comm", v.value); }},
  {"m-b", [](ScenarioSettings& s, const StudySetting& v) { s.m_b = number_value(v); }},
  {"m-w", [](ScenarioSettings& s, const StudySetting& v) { s.m_w = number_value(v); }},
  // In a study, mem-limit 0 names the schedule's default (an axis [0, inf]: default or none);
  // the setting itself refuses an explicit 0.
  {"mem-limit", [](ScenarioSettings& s, const StudySetting& v) {
     if (const double limit = number_value(v); limit != 0) s.mem_limit = limit; }},
  {"overlap-efficiency", [](ScenarioSettings& s, const StudySetting& v) { s.overlap_efficiency = number_value(v); }},
  {"model", [](ScenarioSettings& s, const StudySetting& v) { s.model = v.value; }},
  {"gpu", [](ScenarioSettings& s, const StudySetting& v) { s.gpu = v.value; }},
  {"efficiency", [](ScenarioSettings& s, const StudySetting& v) { s.efficiency = number_value(v); }},
  {"cluster", [](ScenarioSettings& s, const StudySetting& v) { s.cluster = v.value; }},
  {"dp", [](ScenarioSettings& s, const StudySetting& v) { s.dp = whole_value(v); }},
  {"allreduce", [](ScenarioSettings& s, const StudySetting& v) { s.allreduce = v.value; }},
  {"optimizer-sync", [](ScenarioSettings& s, const StudySetting& v) { s.optimizer_sync = v.value; }},
  {"optimizer-ms", [](ScenarioSettings& s, const StudySetting& v) { s.optimizer_ms = number_value(v); }},
  {"comm-bytes", [](ScenarioSettings& s, const StudySetting& v) { s.comm_bytes = number_value(v); }},
  {"grad-bytes", [](ScenarioSettings& s, const StudySetting& v) { s.grad_bytes = number_value(v); }},
  {"profile", [](ScenarioSettings& s, const StudySetting& v) { s.profile = v.value; }},
  {"op-overhead", [](ScenarioSettings& s, const StudySetting& v) {
     s.op_overhead = parse_op_overheads("op-overhead", v.value); }},
  {"p2p", [](ScenarioSettings& s, const StudySetting& v) { s.p2p = parse_p2p("p2p", v.value); }},
  {"calibration", [](ScenarioSettings& s, const StudySetting& v) { s.calibration = v.value; }},
  {"improve", [](ScenarioSettings& s, const StudySetting& v) { s.no_improve = v.value == "off"; }},
};
// clang-format on

}  // namespace

ScenarioSettings settings_from_study(const StudyConfiguration& configuration) {
  ScenarioSettings s;
  for (const StudySetting& setting : configuration.settings) {
    if (setting.key == "schedule") continue;
    const auto* known = std::find_if(std::begin(kStudyKeys), std::end(kStudyKeys),
                                     [&](const StudyKey& k) { return setting.key == k.key; });
    if (known == std::end(kStudyKeys)) {
      throw InvalidArgument("setting '" + setting.key + "': not a setting of a run");
    }
    known->apply(s, setting);
  }
  return s;
}

double parse_number(const std::string& option, std::string_view item, const std::string& text) {
  double value = 0;
  const char* end = item.data() + item.size();
  const auto [ptr, ec] = std::from_chars(item.data(), end, value);
  if (item.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    throw SettingError(option, "'" + std::string(item) + "' is not a number (in '" + text + "')");
  }
  return value;
}

std::vector<double> parse_ms_list(const std::string& option, const std::string& text) {
  std::vector<double> values;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const double ms = parse_number(option, item, text);
    if (ms < 0 || ms > 1e9) {
      throw SettingError(
          option, "time " + std::string(item) + " ms is out of range (expected 0 to 1e9 ms)");
    }
    values.push_back(ms);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return values;
}

std::vector<sim::TimeNs> times_for_devices(const std::string& option, const std::vector<double>& ms,
                                           int devices) {
  std::vector<sim::TimeNs> values;
  for (const double t : ms) {
    if (!(t >= 0 && t <= 1e9)) {
      throw SettingError(option,
                         "time " + format_number(t) + " ms is out of range (expected 0 to 1e9 ms)");
    }
    values.push_back(sim::ms_to_ns(t));
  }
  if (values.size() == 1) values.resize(static_cast<std::size_t>(devices), values.front());
  if (values.size() != static_cast<std::size_t>(devices)) {
    throw SettingError(option, "expected one time in ms or " + std::to_string(devices) +
                                   " comma-separated times (one per device), got " +
                                   std::to_string(values.size()));
  }
  return values;
}

sim::OpOverheads parse_op_overheads(const std::string& option, const std::string& text) {
  const auto ms = [&](std::string_view item) {
    const double value = parse_number(option, item, text);
    if (value < 0 || value > 1e6) {
      throw SettingError(
          option, "overhead " + std::string(item) + " ms is out of range (expected 0 to 1e6 ms)");
    }
    return sim::ms_to_ns(value);
  };
  if (text.find('=') == std::string::npos) {
    const sim::TimeNs all = ms(text);
    return {all, all, all};
  }
  sim::OpOverheads o;
  bool seen[3] = {};
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    const std::string_view kind = item.substr(0, eq);
    const int k = kind == "F" ? 0 : kind == "B" ? 1 : kind == "W" ? 2 : -1;
    if (eq == std::string_view::npos || k < 0 || seen[k]) {
      throw SettingError(
          option, std::string("expected MS or F=MS,B=MS,W=MS (each kind at most once), got '") +
                      text + "'");
    }
    seen[k] = true;
    (k == 0 ? o.f_ns : k == 1 ? o.b_ns : o.w_ns) = ms(item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return o;
}

sim::P2pMode parse_p2p(const std::string& option, const std::string& text) {
  if (text == "async") return sim::P2pMode::Async;
  if (text == "blocking") return sim::P2pMode::Blocking;
  throw SettingError(option, "expected async or blocking, got '" + text + "'");
}

const char* p2p_name(sim::P2pMode mode) {
  return mode == sim::P2pMode::Blocking ? "blocking" : "async";
}

std::string describe_op_overheads(const sim::OpOverheads& o) {
  if (o.f_ns == o.b_ns && o.b_ns == o.w_ns) return format_number(sim::ns_to_ms(o.f_ns));
  return fmt::format("F={},B={},W={}", format_number(sim::ns_to_ms(o.f_ns)),
                     format_number(sim::ns_to_ms(o.b_ns)), format_number(sim::ns_to_ms(o.w_ns)));
}

double estimated_run_bytes(const sim::ScheduleParams& params, bool chunks_given, int dp,
                           bool record) {
  const int chunks = chunks_given ? params.chunks : std::max(params.chunks, 2);
  const double ops = 3.0 * params.pp * chunks * static_cast<double>(params.microbatches) * dp;
  return ops * (kSimulationBytesPerOp + (record ? kRecordBytesPerOp : 0));
}

double default_max_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 16e9;
  return 0.8 * static_cast<double>(pages) * static_cast<double>(page);
}

sim::ScheduleParams params_for(const Scenario& in, const sim::ScheduleGenerator& generator,
                               bool only_where_taken) {
  sim::ScheduleParams params = in.params;
  params.mem_limit = in.mem_limit;
  if (in.mem_limit_given && !generator.takes_mem_limit() && !only_where_taken) {
    throw SettingError("mem-limit",
                       "schedule '" + std::string(generator.name()) +
                           "' does not take a memory limit (zb-auto, zb-v, v-half and v-min do)");
  }
  const bool apply = in.chunks_given && (generator.takes_chunks_option() || !only_where_taken);
  if (!apply) params.chunks = generator.default_chunks();
  return params;
}

}  // namespace bubblesim::analysis::app
