#include "sim/cli/options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "analysis/calibration.h"
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
// `calibrated`: the efficiency of --calibration when --efficiency is not given, else 0.
void apply_model(const po::variables_map& vm, RunInputs& in, std::vector<sim::TimeNs>& f,
                 std::vector<sim::TimeNs>& b, std::vector<sim::TimeNs>& w, std::vector<double>& m_b,
                 std::vector<double>& m_w, double calibrated) {
  const models::TransformerConfig model = models::load_transformer(vm["model"].as<std::string>());
  const models::GpuSpec& gpu = models::find_gpu(vm["gpu"].as<std::string>());
  const double efficiency = calibrated > 0 ? calibrated : vm["efficiency"].as<double>();
  if (!(efficiency > 0 && efficiency <= 1)) {
    throw InvalidArgument("option --efficiency: expected a fraction in (0, 1], got " +
                          format_number(efficiency));
  }
  const std::vector<models::StageEstimate> stages = models::estimate_stages(model, in.params.pp);
  auto time = [&](double flops) {
    return sim::derived_ms_to_ns(models::flops_to_ms(flops, gpu, efficiency),
                                 "--model " + vm["model"].as<std::string>() + " on " + gpu.name +
                                     " at efficiency " + format_number(efficiency));
  };
  for (std::size_t d = 0; d < stages.size(); ++d) {
    if (vm["f"].defaulted()) f[d] = time(stages[d].f_flops);
    if (vm["b"].defaulted()) b[d] = time(stages[d].b_flops);
    if (vm["w"].defaulted()) w[d] = time(stages[d].w_flops);
    if (vm["m-b"].defaulted()) m_b[d] = stages[d].m_b_bytes;
    if (vm["m-w"].defaulted()) m_w[d] = stages[d].m_w_bytes;
    in.static_memory_bytes.push_back(stages[d].static_bytes);
    in.parameters.push_back(stages[d].parameters);
    in.flops_per_microbatch += stages[d].f_flops + stages[d].b_flops + stages[d].w_flops;
  }
  in.gpu = gpu.name;
  in.model_transfer_bytes = stages.front().transfer_bytes;
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
  // The launch and host overhead between passes, unless --op-overhead or --calibration gave one.
  if (vm.count("op-overhead") == 0 && in.calibration.empty()) {
    const sim::TimeNs gap = traces::median_gap_ns(profile);
    if (gap > 0) {
      in.overheads = {gap, gap, gap};
      in.profile_description += fmt::format(
          "; op overhead = {:.3f} ms, the median GPU idle gap between consecutive passes of a "
          "stage when the device was not waiting for an input (give --op-overhead to override)",
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
void check_memory_estimate(const po::variables_map& vm, const RunInputs& in) {
  double limit = default_max_memory_bytes();
  std::string source = "80% of this machine's memory";
  if (vm.count("max-memory") != 0) {
    const double gb = vm["max-memory"].as<double>();
    if (!(gb > 0 && gb <= 1e9)) {
      throw InvalidArgument("option --max-memory: expected GB > 0, got " + format_number(gb));
    }
    limit = gb * 1e9;
    source = "--max-memory";
  }
  const int dp = std::clamp(vm["dp"].as<int>(), 1, 4096);  // checked with its message later
  const double need = estimated_run_bytes(in.params, in.chunks_given, dp, vm.count("out") != 0);
  if (need > limit) {
    const double ops =
        need / (kSimulationBytesPerOp + (vm.count("out") != 0 ? kRecordBytesPerOp : 0));
    throw InvalidArgument(fmt::format(
        "option --max-memory: this run needs about {:.4g} GB ({:.0f} ops at about {:.0f} bytes "
        "each), more than the limit of {:.4g} GB ({}); give a larger --max-memory or fewer "
        "devices or microbatches",
        need / 1e9, ops, need / ops, limit / 1e9, source));
  }
}

// --cluster, --dp, --allreduce, --optimizer-sync: the logical devices' costs, the network and
// what finishes the iteration (RunInputs::replicated).
void apply_cluster(const po::variables_map& vm, RunInputs& in, bool from_file) {
  const std::string sync = vm["optimizer-sync"].as<std::string>();
  const std::string algorithm = vm["allreduce"].as<std::string>();
  in.dp = vm["dp"].as<int>();
  if (in.dp < 1 || in.dp > 4096) {
    throw InvalidArgument("option --dp: expected 1 to 4096 replicas, got " + std::to_string(in.dp));
  }
  if (algorithm != "ring" && algorithm != "tree") {
    throw InvalidArgument("option --allreduce: expected ring or tree, got '" + algorithm + "'");
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
    throw InvalidArgument(
        "option --optimizer-sync: expected none, allreduce or post-validation, got '" + sync + "'");
  }
  in.optimizer_sync_name = sync;
  const bool has_cluster = vm.count("cluster") != 0;
  in.replicated = has_cluster || in.dp > 1 || in.iteration.sync != models::OptimizerSync::None;
  if (in.replicated && in.input_rule != sim::InputRule::All) {
    throw InvalidArgument(
        "option --paper-evaluator: cannot be combined with --cluster, --dp or --optimizer-sync");
  }
  const bool model = vm.count("model") != 0;
  for (const char* name : {"optimizer-ms", "comm-bytes", "grad-bytes"}) {
    if (vm.count(name) != 0 && !in.replicated) {
      throw InvalidArgument(std::string("option --") + name +
                            ": applies only with --cluster, --dp or --optimizer-sync");
    }
  }
  if (!in.replicated) return;
  if (from_file && in.dp > 1) {
    throw InvalidArgument("option --dp: cannot be combined with --schedule-file");
  }
  if (in.dp > 1 && !has_cluster) {
    throw InvalidArgument(
        "option --dp: the replicas' all-reduce needs the links of --cluster FILE");
  }
  const int p = in.params.pp;
  const std::size_t logical = static_cast<std::size_t>(p) * static_cast<std::size_t>(in.dp);
  const models::GpuSpec reference = models::find_gpu(vm["gpu"].as<std::string>());
  std::vector<models::GpuSpec> gpus(logical, reference);
  std::vector<double> time_factor(logical, 1.0);
  models::Cluster cluster;
  if (has_cluster) {
    in.cluster_path = vm["cluster"].as<std::string>();
    if (!vm["comm"].defaulted()) {
      throw InvalidArgument(
          "option --comm: with --cluster the cluster's links time the transfers "
          "(give --comm-bytes for their size)");
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
  if (vm.count("comm-bytes") != 0) {
    comm_bytes = vm["comm-bytes"].as<double>();
    if (!(comm_bytes >= 0 && comm_bytes <= 1e15)) {
      throw InvalidArgument("option --comm-bytes: expected 0 to 1e15 bytes, got " +
                            format_number(comm_bytes));
    }
  } else if (model) {
    comm_bytes = in.model_transfer_bytes;
  } else if (has_cluster) {
    throw InvalidArgument(
        "option --cluster: the size of the transfers is unknown; give --comm-bytes or --model");
  }
  std::vector<double> grad_bytes(static_cast<std::size_t>(p), 0);
  if (vm.count("grad-bytes") != 0) {
    const double g = vm["grad-bytes"].as<double>();
    if (!(g >= 0 && g <= 1e15)) {
      throw InvalidArgument("option --grad-bytes: expected 0 to 1e15 bytes, got " +
                            format_number(g));
    }
    std::fill(grad_bytes.begin(), grad_bytes.end(), g);
  } else if (model) {
    for (int d = 0; d < p; ++d)
      grad_bytes[static_cast<std::size_t>(d)] = 2 * in.parameters[static_cast<std::size_t>(d)];
  } else if (in.dp > 1) {
    throw InvalidArgument(
        "option --dp: the gradients' size is unknown; give --grad-bytes or --model");
  }
  double optimizer_ms = -1;
  if (vm.count("optimizer-ms") != 0) {
    optimizer_ms = vm["optimizer-ms"].as<double>();
    if (!(optimizer_ms >= 0 && optimizer_ms <= 1e9)) {
      throw InvalidArgument("option --optimizer-ms: expected 0 to 1e9 ms, got " +
                            format_number(optimizer_ms));
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
                                   (has_cluster ? "--cluster " + in.cluster_path : "--gpu") +
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
     "GPU type for --model: A100-40GB, A100-80GB, H100-SXM, H200, L40S; with --cluster, the GPU "
     "the given times are for (other GPUs run them scaled by the ratio of dense peaks)")
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
      throw InvalidArgument(vm["schedule-file"].as<std::string>() + ": the schedule file's " +
                            std::to_string(from_file->num_stages()) +
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
  if (vm.count("run-name") != 0) {
    in.run_name = vm["run-name"].as<std::string>();
    if (in.run_name.empty()) throw InvalidArgument("option --run-name: expected a non-empty name");
  }
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
  check_memory_estimate(vm, in);

  const int p = in.params.pp;
  auto f = parse_time_list("--f", vm["f"].as<std::string>(), p);
  auto b = parse_time_list("--b", vm["b"].as<std::string>(), p);
  auto w = parse_time_list("--w", vm["w"].as<std::string>(), p);
  auto comm = parse_time_list("--comm", vm["comm"].as<std::string>(), p);
  const double m_b = non_negative(vm, "m-b");
  const double m_w = non_negative(vm, "m-w");
  in.params.improve = !vm["no-improve"].as<bool>();
  in.mem_limit = vm["mem-limit"].as<double>();
  in.mem_limit_given = !vm["mem-limit"].defaulted();
  // 0 stands for the default (p*M_B) inside; given explicitly it is a mistake, not a request.
  if (std::isnan(in.mem_limit) || in.mem_limit < 0 || (in.mem_limit_given && in.mem_limit == 0)) {
    throw InvalidArgument("option --mem-limit: expected a number > 0 or inf, got " +
                          format_number(in.mem_limit) + " (leave it out for the default, p*M_B)");
  }
  if (vm["paper-evaluator"].as<bool>()) in.input_rule = sim::InputRule::PaperEvaluator;
  const double overlap = vm["overlap-efficiency"].as<double>();
  if (!(overlap >= 0 && overlap <= 1)) {
    throw InvalidArgument(
        fmt::format("option --overlap-efficiency: expected a number from 0 to 1, got {}", overlap));
  }

  std::vector<double> m_bs(static_cast<std::size_t>(p), m_b), m_ws(m_bs.size(), m_w);
  std::optional<analysis::Calibration> calibration;
  if (vm.count("calibration") != 0) {
    in.calibration = vm["calibration"].as<std::string>();
    if (in.calibration.empty()) throw InvalidArgument("option --calibration: expected a file name");
    calibration = analysis::load_calibration(in.calibration);
  }
  if (vm.count("op-overhead") != 0) {
    in.overheads = parse_op_overheads("--op-overhead", vm["op-overhead"].as<std::string>());
  } else if (calibration) {
    in.overheads = calibration->overheads;
  }
  if (!vm["p2p"].defaulted()) {
    in.p2p = parse_p2p("--p2p", vm["p2p"].as<std::string>());
  } else if (calibration) {
    in.p2p = calibration->p2p;
  }
  if (vm.count("model") != 0) {
    apply_model(vm, in, f, b, w, m_bs, m_ws,
                calibration && vm["efficiency"].defaulted() ? calibration->efficiency : 0);
  }
  if (!in.profile.empty()) apply_profile(vm, in, profile, f, b, w, comm);

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
        "options --f/--b/--w/--comm with -p/-m: the iteration could last more than 70 years of "
        "simulated time; use smaller times or fewer microbatches");
  }
  apply_cluster(vm, in, from_file != nullptr);
  if (in.network && in.p2p != sim::P2pMode::Async) {
    throw InvalidArgument(
        "option --p2p: blocking transfers cannot be timed over --cluster's network; give --comm "
        "(the time of one hop) instead");
  }
  return in;
}

sim::OpOverheads parse_op_overheads(const std::string& option, const std::string& text) {
  const auto ms = [&](std::string_view item) {
    const double value = parse_number(option, item, text);
    if (value < 0 || value > 1e6) {
      throw InvalidArgument("option " + option + ": overhead " + std::string(item) +
                            " ms is out of range (expected 0 to 1e6 ms)");
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
      throw InvalidArgument("option " + option + ": expected MS or F=MS,B=MS,W=MS (each kind " +
                            "at most once), got '" + text + "'");
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
  throw InvalidArgument("option " + option + ": expected async or blocking, got '" + text + "'");
}

const char* p2p_name(sim::P2pMode mode) {
  return mode == sim::P2pMode::Blocking ? "blocking" : "async";
}

std::string describe_op_overheads(const sim::OpOverheads& o) {
  if (o.f_ns == o.b_ns && o.b_ns == o.w_ns) return format_number(sim::ns_to_ms(o.f_ns));
  return fmt::format("F={},B={},W={}", format_number(sim::ns_to_ms(o.f_ns)),
                     format_number(sim::ns_to_ms(o.b_ns)), format_number(sim::ns_to_ms(o.w_ns)));
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

sim::ScheduleParams params_for(const RunInputs& in, const sim::ScheduleGenerator& generator,
                               bool only_where_taken) {
  sim::ScheduleParams params = in.params;
  params.mem_limit = in.mem_limit;
  if (in.mem_limit_given && !generator.takes_mem_limit() && !only_where_taken) {
    throw InvalidArgument("option --mem-limit: schedule '" + std::string(generator.name()) +
                          "' does not take a memory limit (zb-auto, zb-v, v-half and v-min do)");
  }
  const bool apply = in.chunks_given && (generator.takes_chunks_option() || !only_where_taken);
  if (!apply) params.chunks = generator.default_chunks();
  return params;
}

}  // namespace bubblesim::cli
