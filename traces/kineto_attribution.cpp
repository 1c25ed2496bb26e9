#include "traces/kineto_attribution.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <utility>

namespace bubblesim::traces {

namespace {

// A point in time on a process or device, to be placed in the ranges of that key.
struct Query {
  std::int64_t key;
  TimeNs ts_ns;
  std::uint32_t item;
};

// For each query (in any order), calls match(query, range index) with the innermost range of
// its key that contains it (start <= ts <= end; the latest start wins), if any. Sorts both.
template <class Match>
void place(std::vector<Range>& ranges, std::vector<Query>& queries, Match match) {
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.key != b.key ? a.key < b.key : a.start_ns < b.start_ns;
  });
  std::sort(queries.begin(), queries.end(), [](const Query& a, const Query& b) {
    return a.key != b.key ? a.key < b.key : a.ts_ns < b.ts_ns;
  });
  // Ranges open at the current time, latest start on top; ended ones leave lazily, when they
  // come to the top (below the top they can never win).
  std::priority_queue<std::size_t> open;
  std::size_t next = 0;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Query& query = queries[q];
    if (q == 0 || query.key != queries[q - 1].key) {
      open = {};
      while (next < ranges.size() && ranges[next].key < query.key)
        ++next;
    }
    while (next < ranges.size() && ranges[next].key == query.key &&
           ranges[next].start_ns <= query.ts_ns) {
      open.push(next++);
    }
    while (!open.empty() && ranges[open.top()].end_ns < query.ts_ns)
      open.pop();
    if (!open.empty()) match(query, open.top());
  }
}

TimeNs saturating_add(TimeNs a, TimeNs b) {
  TimeNs sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<TimeNs>::max() : sum;
}

}  // namespace

void add_trace(TraceRecords& r, std::int32_t trace, Profile& profile) {
  std::sort(r.launches.begin(), r.launches.end(),
            [](const Launch& a, const Launch& b) { return a.correlation < b.correlation; });
  const auto launch_of = [&](const GpuOp& op) -> const Launch* {
    if (op.correlation == kNoCorrelation) return nullptr;
    const auto it =
        std::lower_bound(r.launches.begin(), r.launches.end(), op.correlation,
                         [](const Launch& l, std::uint64_t c) { return l.correlation < c; });
    return it != r.launches.end() && it->correlation == op.correlation ? &*it : nullptr;
  };

  // One sample per labelled range, filled by the ops placed in it.
  std::vector<PassSample> cpu_samples(r.cpu_ranges.size()), gpu_samples(r.gpu_ranges.size());
  const auto add_op = [&](PassSample& s, const Range& range, const GpuOp& op) {
    if (s.gpu_ops == 0) {
      s = PassSample{range.label, trace, range.key, op.start_ns, op.start_ns + op.dur_ns, 0, 0};
      s.thread = range.thread;
    }
    s.gpu_start_ns = std::min(s.gpu_start_ns, op.start_ns);
    s.gpu_end_ns = std::max(s.gpu_end_ns, op.start_ns + op.dur_ns);
    s.kernel_ns = saturating_add(s.kernel_ns, op.dur_ns);
    ++s.gpu_ops;
  };

  // The peak of an import is here: fit the records to their size before adding the queries.
  r.ops.shrink_to_fit();
  r.launches.shrink_to_fit();
  std::vector<Query> queries;
  queries.reserve(r.ops.size());

  // Compute ops: by launch in the CPU ranges, the rest by start in the GPU ranges.
  std::vector<bool> placed(r.ops.size());
  for (std::uint32_t i = 0; i < r.ops.size(); ++i) {
    if (r.ops[i].type == GpuOpType::Nccl) continue;
    if (const Launch* l = launch_of(r.ops[i])) queries.push_back(Query{l->process, l->ts_ns, i});
  }
  // place() sorts the ranges: the samples are indexed in that order.
  place(r.cpu_ranges, queries, [&](const Query& q, std::size_t range) {
    add_op(cpu_samples[range], r.cpu_ranges[range], r.ops[q.item]);
    placed[q.item] = true;
  });
  queries.clear();
  for (std::uint32_t i = 0; i < r.ops.size(); ++i) {
    if (r.ops[i].type != GpuOpType::Nccl && !placed[i]) {
      queries.push_back(Query{r.ops[i].device, r.ops[i].start_ns, i});
    }
  }
  place(r.gpu_ranges, queries, [&](const Query& q, std::size_t range) {
    add_op(gpu_samples[range], r.gpu_ranges[range], r.ops[q.item]);
    placed[q.item] = true;
  });

  // NCCL kernels: the annotation that encloses their launch.
  queries.clear();
  for (std::uint32_t k = 0; k < r.nccl.size(); ++k) {
    if (const Launch* l = launch_of(r.ops[r.nccl[k].op])) {
      queries.push_back(Query{l->process, l->ts_ns, k});
    }
  }
  place(r.nccl_ranges, queries, [&](const Query& q, std::size_t range) {
    r.nccl[q.item].from_annotation = r.nccl_ranges[range].collective;
  });

  // A trace without GPU work (recorded on CPU): each labelled range is timed by itself.
  const bool cpu_timed = r.ops.empty() && r.direct.empty();
  std::vector<bool> empty_passes(r.cpu_ranges.size());  // passes of no GPU work (below)
  if (cpu_timed) {
    for (std::size_t i = 0; i < r.cpu_ranges.size(); ++i) {
      const Range& range = r.cpu_ranges[i];
      cpu_samples[i] = PassSample{range.label,
                                  trace,
                                  range.key,
                                  range.start_ns,
                                  range.end_ns,
                                  range.end_ns - range.start_ns,
                                  0};
      cpu_samples[i].thread = range.thread;
    }
  }

  // Labelled ranges of a GPU trace that launched no GPU work are passes that took no time
  // (PyTorch's zero-bubble schedules run the first stage's input gradients, which compute
  // nothing, in ranges of their own): each is placed where its process's GPU work stood when
  // the range began, the end of the latest GPU op the process had launched before it. Ranges
  // before any launch of their process stay out. (Most traces have none: the per-op table is
  // built only when a labelled range is empty, not at every import's peak.)
  const bool any_empty = std::any_of(cpu_samples.begin(), cpu_samples.end(),
                                     [](const PassSample& s) { return s.gpu_ops == 0; });
  if (!cpu_timed && any_empty) {
    // Per process, the launches in time order with the latest GPU end up to each.
    std::map<std::int64_t, std::vector<std::pair<TimeNs, TimeNs>>> reached;
    for (const GpuOp& op : r.ops) {
      if (const Launch* l = launch_of(op)) {
        reached[l->process].emplace_back(l->ts_ns, saturating_add(op.start_ns, op.dur_ns));
      }
    }
    for (auto& [process, ends] : reached) {
      std::sort(ends.begin(), ends.end());
      for (std::size_t i = 1; i < ends.size(); ++i)
        ends[i].second = std::max(ends[i].second, ends[i - 1].second);
    }
    for (std::size_t i = 0; i < r.cpu_ranges.size(); ++i) {
      const Range& range = r.cpu_ranges[i];
      const auto it = reached.find(range.key);
      if (cpu_samples[i].gpu_ops > 0 || it == reached.end()) continue;
      const auto& ends = it->second;
      const auto after = std::upper_bound(
          ends.begin(), ends.end(), std::pair{range.start_ns, std::numeric_limits<TimeNs>::max()});
      if (after == ends.begin()) continue;
      const TimeNs at = std::prev(after)->second;
      cpu_samples[i] = PassSample{range.label, trace, range.key, at, at, 0, 0};
      cpu_samples[i].thread = range.thread;
      empty_passes[i] = true;
    }
  }

  // Iterations: boundaries at or before the start of each sample's range.
  std::sort(r.boundaries.begin(), r.boundaries.end());
  const auto iteration_at = [&](TimeNs start) {
    return static_cast<std::int32_t>(
        std::upper_bound(r.boundaries.begin(), r.boundaries.end(), start) - r.boundaries.begin());
  };
  std::size_t first = profile.passes.size();
  for (std::size_t i = 0; i < cpu_samples.size(); ++i) {
    if (cpu_samples[i].gpu_ops == 0 && !cpu_timed && !empty_passes[i]) continue;
    cpu_samples[i].iteration = iteration_at(r.cpu_ranges[i].start_ns);
    profile.passes.push_back(cpu_samples[i]);
    if (cpu_timed) ++profile.cpu_timed_passes;
    if (empty_passes[i]) ++profile.empty_passes;
  }
  for (std::size_t i = 0; i < gpu_samples.size(); ++i) {
    if (gpu_samples[i].gpu_ops == 0) continue;
    gpu_samples[i].iteration = iteration_at(r.gpu_ranges[i].start_ns);
    profile.passes.push_back(gpu_samples[i]);
  }
  for (PassSample& s : r.direct) {
    s.trace = trace;
    s.iteration = iteration_at(s.gpu_start_ns);
    profile.passes.push_back(s);
  }
  // Renumbered 0, 1, ... over the iterations that hold samples.
  std::vector<std::int32_t> held;
  for (std::size_t i = first; i < profile.passes.size(); ++i)
    held.push_back(profile.passes[i].iteration);
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  for (std::size_t i = first; i < profile.passes.size(); ++i) {
    PassSample& s = profile.passes[i];
    s.iteration = static_cast<std::int32_t>(
        std::lower_bound(held.begin(), held.end(), s.iteration) - held.begin());
  }
  std::stable_sort(
      profile.passes.begin() + static_cast<std::ptrdiff_t>(first), profile.passes.end(),
      [](const PassSample& a, const PassSample& b) { return a.gpu_start_ns < b.gpu_start_ns; });

  for (const NcclKernel& k : r.nccl) {
    const GpuOp& op = r.ops[k.op];
    const Collective collective = k.from_metadata != Collective::Unknown     ? k.from_metadata
                                  : k.from_annotation != Collective::Unknown ? k.from_annotation
                                                                             : k.from_name;
    profile.comms.push_back(
        CommSample{collective, trace, op.device, op.start_ns, op.dur_ns, k.in_bytes, k.out_bytes});
  }

  std::map<std::int32_t, std::size_t> kernels_per_device;
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const GpuOp& op = r.ops[i];
    switch (op.type) {
      case GpuOpType::Memcpy:
        ++profile.memcpys;
        break;
      case GpuOpType::Memset:
        ++profile.memsets;
        break;
      case GpuOpType::Kernel:
      case GpuOpType::Nccl:
        ++profile.kernels;
        profile.total_kernel_ns = saturating_add(profile.total_kernel_ns, op.dur_ns);
        ++kernels_per_device[op.device];
        break;
    }
    if (op.type != GpuOpType::Nccl && !placed[i]) ++profile.unattributed_gpu_ops;
  }
  for (const PassSample& s : r.direct) {
    ++profile.kernels;
    profile.total_kernel_ns = saturating_add(profile.total_kernel_ns, s.kernel_ns);
    ++kernels_per_device[static_cast<std::int32_t>(s.process)];
  }
  for (const auto& [device, kernels] : kernels_per_device) {
    const auto name = r.device_names.find(device);
    profile.devices.push_back(
        DeviceInfo{trace, device, name == r.device_names.end() ? "" : name->second, kernels});
  }
}

}  // namespace bubblesim::traces
