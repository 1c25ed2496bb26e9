#include "traces/replay.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "sim/cost_model.h"
#include "sim/op_graph.h"
#include "sim/simulation.h"
#include "traces/statistics.h"

namespace bubblesim::traces {

namespace {

using sim::TimeNs;

// Each op's own duration, looked up by its slot; transfers take `comm_ns`; memory is not
// modelled (0).
class ReplayCostModel final : public sim::CostModel {
 public:
  ReplayCostModel(const sim::Schedule& schedule, TimeNs comm_ns)
      : slots_(schedule.num_stages(), schedule.num_microbatches),
        durations_(slots_.size(), 0),
        comm_ns_(comm_ns) {}

  void set(const sim::Op& op, TimeNs duration_ns) { durations_[slots_(op)] = duration_ns; }

  TimeNs duration_ns(const sim::Op& op, int /*device*/) const override {
    return durations_[slots_(op)];
  }
  TimeNs transfer_ns(int /*src*/, int /*dst*/) const override { return comm_ns_; }
  double activation_delta(const sim::Op& /*op*/, int /*device*/) const override { return 0; }

 private:
  sim::OpSlots slots_;
  std::vector<TimeNs> durations_;
  TimeNs comm_ns_;
};

TimeNs end_of(const sim::Timeline& timeline) {
  TimeNs end = 0;
  for (const auto& ops : timeline.device_ops)
    for (const sim::OpTiming& t : ops)
      end = std::max(end, t.end_ns);
  return end;
}

// A device's passes of one trace iteration in order of start, cut into rounds wherever a pass
// whose label names its microbatch comes again (the same kind, stage and microbatch): a
// schedule runs each pass once, so a repeat starts the next training step. Traces with no
// iteration boundary (no optimizer step: a forward-backward loop, the CUPTI profiler's files)
// then still give one schedule per step. Labels without a microbatch never cut.
std::vector<std::vector<const PassSample*>> rounds_of(std::vector<const PassSample*> samples) {
  std::stable_sort(samples.begin(), samples.end(), [](const PassSample* a, const PassSample* b) {
    return a->gpu_start_ns < b->gpu_start_ns;
  });
  std::vector<std::vector<const PassSample*>> rounds(1);
  std::set<std::tuple<int, int, int>> seen;
  for (const PassSample* s : samples) {
    if (s->label.microbatch != kNoNumber) {
      const std::tuple<int, int, int> pass{static_cast<int>(s->label.pass), s->label.stage,
                                           s->label.microbatch};
      if (!seen.insert(pass).second) {
        rounds.emplace_back();
        seen = {pass};
      }
    }
    rounds.back().push_back(s);
  }
  return rounds;
}

}  // namespace

std::vector<ExecutedIteration> executed_iterations(const Profile& profile) {
  // iteration -> (trace, process, thread) -> passes in trace order.
  using Key = std::tuple<std::int32_t, std::int64_t, std::int64_t>;
  std::map<std::int32_t, std::map<Key, std::vector<const PassSample*>>> grouped;
  for (const PassSample& s : profile.passes)
    grouped[s.iteration][{s.trace, s.process, s.thread}].push_back(&s);
  // Each trace iteration, cut into the steps it holds (rounds_of): step -> device -> passes.
  std::vector<std::map<Key, std::vector<const PassSample*>>> steps;
  for (const auto& [iteration, devices] : grouped) {
    const std::size_t first = steps.size();
    for (const auto& [key, samples] : devices) {
      std::vector<std::vector<const PassSample*>> rounds = rounds_of(samples);
      if (steps.size() < first + rounds.size()) steps.resize(first + rounds.size());
      for (std::size_t r = 0; r < rounds.size(); ++r)
        steps[first + r][key] = std::move(rounds[r]);
    }
  }

  std::vector<ExecutedIteration> result;
  for (const auto& devices : steps) {
    ExecutedIteration it;
    it.iteration = static_cast<std::int32_t>(result.size());
    it.start_ns = INT64_MAX;
    it.end_ns = INT64_MIN;
    // Microbatch counters for labels without one: (device, stage, kind) -> next.
    std::map<std::tuple<int, int, int>, int> next_microbatch;
    for (const auto& [key, ordered] : devices) {
      ExecutedDevice device{std::get<0>(key), std::get<1>(key), std::get<2>(key), {}};
      const int index = static_cast<int>(it.devices.size());
      for (const PassSample* s : ordered) {
        sim::Op op{s->label.pass, s->label.stage, 0, s->label.microbatch};
        if (op.stage == kNoNumber) op.stage = index;
        if (op.microbatch == kNoNumber) {
          op.microbatch = next_microbatch[{index, op.stage, static_cast<int>(op.kind)}]++;
        }
        device.passes.push_back(ExecutedPass{op, s->gpu_start_ns, s->gpu_end_ns});
        it.start_ns = std::min(it.start_ns, s->gpu_start_ns);
        it.end_ns = std::max(it.end_ns, s->gpu_end_ns);
      }
      it.devices.push_back(std::move(device));
    }
    // A B without a W of its stage and microbatch is the full backward.
    std::set<std::pair<int, int>> weights;
    for (const ExecutedDevice& d : it.devices)
      for (const ExecutedPass& p : d.passes)
        if (p.op.kind == sim::OpKind::W) weights.emplace(p.op.stage, p.op.microbatch);
    for (ExecutedDevice& d : it.devices) {
      for (ExecutedPass& p : d.passes) {
        if (p.op.kind == sim::OpKind::B && weights.count({p.op.stage, p.op.microbatch}) == 0) {
          p.op.kind = sim::OpKind::BW;
        }
      }
    }
    result.push_back(std::move(it));
  }
  return result;
}

sim::Schedule executed_schedule(const ExecutedIteration& iteration) {
  const std::string where = "iteration " + std::to_string(iteration.iteration) + ": ";
  sim::Schedule schedule;
  std::map<int, int> stage_device;
  int max_mb = -1;
  for (std::size_t d = 0; d < iteration.devices.size(); ++d) {
    const ExecutedDevice& device = iteration.devices[d];
    auto& ops = schedule.device_ops.emplace_back();
    for (const ExecutedPass& p : device.passes) {
      const auto [home, fresh] = stage_device.emplace(p.op.stage, static_cast<int>(d));
      if (!fresh && home->second != static_cast<int>(d)) {
        const ExecutedDevice& other = iteration.devices[static_cast<std::size_t>(home->second)];
        throw Error(where + "stage " + std::to_string(p.op.stage) + " runs on two devices (trace " +
                    std::to_string(other.trace) + " process " + std::to_string(other.process) +
                    " and trace " + std::to_string(device.trace) + " process " +
                    std::to_string(device.process) + ")");
      }
      max_mb = std::max(max_mb, p.op.microbatch);
      ops.push_back(p.op);
    }
  }
  const int stages = stage_device.empty() ? 0 : stage_device.rbegin()->first + 1;
  for (int s = 0; s < stages; ++s) {
    const auto it = stage_device.find(s);
    if (it == stage_device.end()) {
      throw Error(where + "no pass of stage " + std::to_string(s) + " (stages 0 to " +
                  std::to_string(stages - 1) + " appear)");
    }
    schedule.stage_device.push_back(it->second);
  }
  schedule.num_microbatches = max_mb + 1;
  const std::vector<int> chunks = schedule.stage_chunks();
  for (auto& ops : schedule.device_ops)
    for (sim::Op& op : ops)
      op.chunk = chunks[static_cast<std::size_t>(op.stage)];
  try {
    sim::check_runnable(schedule);
  } catch (const sim::ScheduleError& e) {
    throw Error(where + e.what());
  }
  return schedule;
}

ReplayResult replay_profile(const Profile& profile, TimeNs comm_ns, sim::P2pMode p2p) {
  if (profile.passes.empty()) {
    throw Error(
        "no labelled passes in the traces (PyTorch pipelining's PP:<stage><F|I|W|B><mb>, or a "
        "label-regex naming them)");
  }
  const std::vector<ExecutedIteration> iterations = executed_iterations(profile);
  // Per-(stage, kind) medians over every iteration.
  std::map<std::pair<int, int>, std::vector<TimeNs>> samples;
  for (const ExecutedIteration& it : iterations)
    for (const ExecutedDevice& d : it.devices)
      for (const ExecutedPass& p : d.passes)
        samples[{p.op.stage, static_cast<int>(p.op.kind)}].push_back(p.end_ns - p.start_ns);
  std::map<std::pair<int, int>, TimeNs> medians;
  for (auto& [key, v] : samples)
    medians[key] = median_ns(std::move(v));

  ReplayResult result;
  for (const ExecutedIteration& it : iterations) {
    IterationReplay r;
    r.iteration = it.iteration;
    try {
      r.schedule = executed_schedule(it);
    } catch (const Error& e) {
      result.skipped.push_back(e.what());
      continue;
    }
    ReplayCostModel own(r.schedule, comm_ns), median(r.schedule, comm_ns);
    for (const ExecutedDevice& d : it.devices) {
      for (std::size_t i = 0; i < d.passes.size(); ++i) {
        const sim::Op& op =
            r.schedule.device_ops[static_cast<std::size_t>(&d - it.devices.data())][i];
        own.set(op, d.passes[i].end_ns - d.passes[i].start_ns);
        median.set(op, medians[{op.stage, static_cast<int>(op.kind)}]);
      }
    }
    const sim::Timeline replayed =
        sim::simulate(r.schedule, own, {}, nullptr, sim::InputRule::All, p2p).timeline;
    r.measured_ns = it.end_ns - it.start_ns;
    r.replayed_ns = end_of(replayed);
    r.median_ns =
        end_of(sim::simulate(r.schedule, median, {}, nullptr, sim::InputRule::All, p2p).timeline);
    for (std::size_t d = 0; d < it.devices.size(); ++d) {
      const ExecutedDevice& device = it.devices[d];
      const auto& timing = replayed.device_ops[d];
      DeviceReplay dr{device.trace, device.process, device.thread, 0, 0, false, {}};
      TimeNs first = INT64_MAX, last = INT64_MIN, busy_until = it.start_ns;
      for (std::size_t i = 0; i < device.passes.size(); ++i) {
        const ExecutedPass& p = device.passes[i];
        first = std::min(first, p.start_ns);
        last = std::max(last, p.end_ns);
        const GapComparison gap{static_cast<int>(d), i, r.schedule.device_ops[d][i],
                                p.start_ns - busy_until,
                                timing[i].start_ns - (i == 0 ? 0 : timing[i - 1].end_ns)};
        busy_until = std::max(busy_until, p.end_ns);
        if (gap.measured_gap_ns > 0 &&
            (!dr.has_gap || gap.measured_gap_ns > dr.largest.measured_gap_ns)) {
          dr.has_gap = true;
          dr.largest = gap;
        }
        if (gap.measured_gap_ns != gap.replayed_gap_ns) r.gaps.push_back(gap);
      }
      dr.measured_span_ns = last - first;
      dr.replayed_span_ns = timing.back().end_ns - timing.front().start_ns;
      r.devices.push_back(dr);
    }
    std::stable_sort(r.gaps.begin(), r.gaps.end(),
                     [](const GapComparison& a, const GapComparison& b) {
                       return std::llabs(a.measured_gap_ns - a.replayed_gap_ns) >
                              std::llabs(b.measured_gap_ns - b.replayed_gap_ns);
                     });
    result.iterations.push_back(std::move(r));
  }
  if (result.iterations.empty()) {
    std::string why;
    for (const std::string& s : result.skipped)
      why += (why.empty() ? "" : "; ") + s;
    throw Error("no iteration of the traces is a complete schedule to replay: " + why);
  }
  return result;
}

}  // namespace bubblesim::traces
