#include "profiler/collector.h"

#include <algorithm>
#include <utility>

namespace bubblesim::profiler {

std::optional<LaunchApi> launch_api_of(std::string_view name) {
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("GraphLaunch")) return LaunchApi::Graph;
  if (has("Graph")) return std::nullopt;  // graph construction: cudaGraphAddMemcpyNode...
  if (has("LaunchKernel") || has("LaunchCooperativeKernel")) return LaunchApi::Kernel;
  if (has("Memcpy")) return LaunchApi::Memcpy;
  if (has("Memset")) return LaunchApi::Memset;
  return std::nullopt;
}

Collector::Collector(std::unique_ptr<traces::RangeLabeller> labeller, CollectorOptions options)
    : labeller_(std::move(labeller)), options_(std::move(options)) {}

Collector::OpenRange Collector::open(std::uint32_t thread, std::string_view name,
                                     std::int64_t ts_ns) {
  std::optional<traces::RangeLabel> label;
  try {
    label = labeller_->label(name);
  } catch (...) {  // a --label-regex match whose groups are not numbers: not a pass
    label.reset();
  }
  const bool step = !options_.step_prefix.empty() && name.starts_with(options_.step_prefix);
  if (!label) return OpenRange{kNoRange, ts_ns, step};
  if (!open_labelled_.empty()) ++capture_.counters.overlapping_ranges;
  RangeRecord record;
  record.id = capture_.ranges.size() + 1;
  record.name.assign(name);
  record.start_ns = ts_ns;
  record.end_ns = ts_ns;
  record.thread = thread;
  record.label = *label;
  record.open = true;
  capture_.ranges.push_back(std::move(record));
  open_labelled_.push_back(capture_.ranges.back().id);
  return OpenRange{capture_.ranges.back().id, ts_ns, step};
}

bool Collector::close(const OpenRange& range, std::int64_t ts_ns) {
  if (range.id != kNoRange) {
    RangeRecord& record = capture_.ranges[range.id - 1];
    record.end_ns = ts_ns;
    record.open = false;
    std::erase(open_labelled_, range.id);
  }
  if (!range.step) return false;
  ++steps_;
  return options_.flush_every_steps != 0 && steps_ % options_.flush_every_steps == 0;
}

std::uint64_t Collector::current_range() const {
  return open_labelled_.empty() ? kNoRange
                                : *std::max_element(open_labelled_.begin(), open_labelled_.end());
}

void Collector::range_push(std::uint32_t thread, std::string_view name, std::int64_t ts_ns) {
  const std::lock_guard lock(mutex_);
  threads_[thread].stack.push_back(open(thread, name, ts_ns));
}

bool Collector::range_pop(std::uint32_t thread, std::int64_t ts_ns) {
  const std::lock_guard lock(mutex_);
  auto& stack = threads_[thread].stack;
  if (stack.empty()) {
    ++capture_.counters.unbalanced_pops;
    return false;
  }
  const OpenRange range = stack.back();
  stack.pop_back();
  return close(range, ts_ns);
}

std::uint64_t Collector::range_start(std::uint32_t thread, std::string_view name,
                                     std::int64_t ts_ns) {
  const std::lock_guard lock(mutex_);
  const std::uint64_t handle = next_handle_++;
  process_ranges_.emplace(handle, open(thread, name, ts_ns));
  return handle;
}

bool Collector::range_end(std::uint64_t handle, std::int64_t ts_ns) {
  const std::lock_guard lock(mutex_);
  const auto it = process_ranges_.find(handle);
  if (it == process_ranges_.end()) {
    ++capture_.counters.unbalanced_pops;
    return false;
  }
  const OpenRange range = it->second;
  process_ranges_.erase(it);
  return close(range, ts_ns);
}

void Collector::nccl_push(std::uint32_t thread, std::string_view function,
                          std::optional<NcclCall> call) {
  const std::lock_guard lock(mutex_);
  ThreadState& t = threads_[thread];
  const NcclRange kind = function == "ncclGroupStart" ? NcclRange::GroupStart
                         : function == "ncclGroupEnd" ? NcclRange::GroupEnd
                                                      : NcclRange::Call;
  t.nccl_stack.push_back(kind);
  if (kind == NcclRange::GroupStart) ++t.nccl_group_depth;
  if (call) {
    if (t.pending_group != kNoNcclGroup) {  // a launch already took the calls before this one
      t.pending.clear();
      t.pending_group = kNoNcclGroup;
    }
    t.pending.push_back(std::move(*call));
  }
}

void Collector::nccl_pop(std::uint32_t thread) {
  const std::lock_guard lock(mutex_);
  ThreadState& t = threads_[thread];
  if (t.nccl_stack.empty()) {
    ++capture_.counters.unbalanced_pops;
    return;
  }
  const NcclRange kind = t.nccl_stack.back();
  t.nccl_stack.pop_back();
  // ncclGroupStart's range closes right away, the group stays open until the ncclGroupEnd
  // that matches the outermost ncclGroupStart closes; a call outside any group is a group.
  if (kind == NcclRange::GroupEnd) t.nccl_group_depth = std::max(0, t.nccl_group_depth - 1);
  if (kind != NcclRange::GroupStart && t.nccl_group_depth == 0 && t.nccl_stack.empty()) {
    t.pending.clear();
    t.pending_group = kNoNcclGroup;
  }
}

void Collector::launch(std::uint32_t thread, std::uint32_t correlation, LaunchApi api,
                       std::int64_t ts_ns) {
  const std::lock_guard lock(mutex_);
  ThreadState& t = threads_[thread];
  // A runtime launch (cudaLaunchKernel, cudaGraphLaunch) calls the driver's, and CUPTI calls
  // back for both with the same correlation id: one launch (on an H200 under CUDA 13.0, PyTorch's
  // elementwise kernels and graph launches came twice).
  if (t.last_launch == correlation) return;
  t.last_launch = correlation;
  LaunchRecord record;
  record.correlation = correlation;
  record.ts_ns = ts_ns;
  record.thread = thread;
  record.range = current_range();
  record.api = api;
  if (!t.nccl_stack.empty() && !t.pending.empty()) {
    if (t.pending_group == kNoNcclGroup) {
      t.pending_group = static_cast<std::int32_t>(capture_.nccl_groups.size());
      capture_.nccl_groups.push_back(NcclGroup{t.pending});
    }
    record.nccl_group = t.pending_group;
  }
  capture_.launches.push_back(record);
}

void Collector::add_records(DecodedRecords records) {
  const std::lock_guard lock(mutex_);
  std::vector<std::uint32_t> map(records.names.size());
  for (std::size_t i = 0; i < records.names.size(); ++i) {
    const auto [it, fresh] =
        name_index_.emplace(records.names[i], static_cast<std::uint32_t>(capture_.names.size()));
    if (fresh) capture_.names.push_back(records.names[i]);
    map[i] = it->second;
  }
  for (KernelRecord& k : records.kernels) {
    k.name = map.at(k.name);
    capture_.kernels.push_back(k);
  }
  capture_.mems.insert(capture_.mems.end(), records.mems.begin(), records.mems.end());
  Counters& c = capture_.counters;
  c.zero_timestamp_records += records.counters.zero_timestamp_records;
  c.incomplete_buffers += records.counters.incomplete_buffers;
  c.other_records += records.counters.other_records;
  c.buffers_completed += records.counters.buffers_completed;
}

void Collector::add_counters(const Counters& counters) {
  const std::lock_guard lock(mutex_);
  Counters& c = capture_.counters;
  c.dropped_records += counters.dropped_records;
  c.pool_exhausted += counters.pool_exhausted;
  c.cupti_errors += counters.cupti_errors;
}

Capture Collector::snapshot(std::int64_t now_ns) const {
  const std::lock_guard lock(mutex_);
  Capture copy = capture_;
  for (RangeRecord& r : copy.ranges) {
    if (r.open) r.end_ns = std::max(r.start_ns, now_ns);
  }
  return copy;
}

}  // namespace bubblesim::profiler
