#include "profiler/chrome_writer.h"

#include <cxxabi.h>
#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace bubblesim::profiler {

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::OStreamWrapper>;

// Nanoseconds as microseconds with three decimals ("-1.005" for -1005 ns).
void write_us(JsonWriter& w, std::int64_t ns) {
  char text[32];
  const bool negative = ns < 0;
  const std::uint64_t abs = negative ? 0 - static_cast<std::uint64_t>(ns) : ns;
  const int n = std::snprintf(text, sizeof text, "%s%llu.%03llu", negative ? "-" : "",
                              static_cast<unsigned long long>(abs / 1000),
                              static_cast<unsigned long long>(abs % 1000));
  w.RawValue(text, static_cast<rapidjson::SizeType>(n), rapidjson::kNumberType);
}

void key(JsonWriter& w, const char* k) {
  w.Key(k);
}

// One key and its value: integers as JSON integers (signed or not), bool, double, text.
template <class T>
void field(JsonWriter& w, const char* k, const T& value) {
  w.Key(k);
  if constexpr (std::is_same_v<T, bool>) {
    w.Bool(value);
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    w.Int64(static_cast<std::int64_t>(value));
  } else if constexpr (std::is_integral_v<T>) {
    w.Uint64(static_cast<std::uint64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    w.Double(value);
  } else {
    const std::string_view text(value);
    w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  }
}

void write_clock(JsonWriter& w, const ClockTriple& c) {
  w.StartObject();
  field(w, "cupti_ns", c.cupti_ns);
  field(w, "realtime_ns", c.realtime_ns);
  field(w, "monotonic_ns", c.monotonic_ns);
  w.EndObject();
}

const char* launch_name(LaunchApi api) {
  switch (api) {
    case LaunchApi::Kernel:
      return "cuLaunchKernel";
    case LaunchApi::Memcpy:
      return "cudaMemcpy";
    case LaunchApi::Memset:
      return "cudaMemset";
    case LaunchApi::Graph:
      return "cudaGraphLaunch";
  }
  return "cuLaunchKernel";
}

// The text the importer's collective_of_text reads back as `c`.
const char* collective_text(traces::Collective c) {
  using traces::Collective;
  switch (c) {
    case Collective::AllReduce:
      return "allreduce";
    case Collective::AllGather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::SendRecv:
      return "sendrecv";
    case Collective::AllToAll:
      return "all_to_all";
    case Collective::Unknown:
      break;
  }
  return "";
}

void write_header(JsonWriter& w, const Capture& c, std::size_t unmatched) {
  const CaptureHeader& h = c.header;
  w.StartObject();
  field(w, "format", "bubblesim-profiler");
  field(w, "format_version", 1);
  field(w, "status", h.status);
  field(w, "cuda_runtime_version", h.cuda_runtime_version);
  field(w, "cuda_driver_version", h.cuda_driver_version);
  field(w, "cupti_api_version", h.cupti_api_version);
  field(w, "nccl_version", h.nccl_version);
  field(w, "built_cuda_version", h.built_cuda_version);
  key(w, "devices");
  w.StartArray();
  for (const DeviceName& d : h.devices) {
    w.StartObject();
    field(w, "id", d.id);
    field(w, "name", d.name);
    w.EndObject();
  }
  w.EndArray();
  field(w, "rank", h.rank);
  field(w, "local_rank", h.local_rank);
  field(w, "world_size", h.world_size);
  field(w, "pid", h.pid);
  field(w, "hostname", h.hostname);
  key(w, "clock");
  w.String("cuptiGetTimestamp (CLOCK_REALTIME on Linux), ns; ts/dur in us");
  key(w, "clock_start");
  write_clock(w, h.clock_start);
  key(w, "clock_end");
  write_clock(w, h.clock_end);
  const Counters& k = c.counters;
  key(w, "counters");
  w.StartObject();
  const std::pair<const char*, std::uint64_t> counters[] = {
      {"kernels", c.kernels.size()},
      {"memops", c.mems.size()},
      {"launches", c.launches.size()},
      {"labelled_ranges", c.ranges.size()},
      {"kernels_without_launch", unmatched},
      {"dropped_records", k.dropped_records},
      {"zero_timestamp_records", k.zero_timestamp_records},
      {"incomplete_buffers", k.incomplete_buffers},
      {"buffers_completed", k.buffers_completed},
      {"pool_exhausted", k.pool_exhausted},
      {"other_records", k.other_records},
      {"overlapping_ranges", k.overlapping_ranges},
      {"unbalanced_pops", k.unbalanced_pops},
      {"cupti_errors", k.cupti_errors}};
  for (const auto& [name, value] : counters) {
    key(w, name);
    w.Uint64(value);
  }
  w.EndObject();
  w.EndObject();
}

void write_event_head(JsonWriter& w, const char* cat, const std::string& name, std::int64_t pid,
                      std::int64_t tid, std::int64_t start_ns, std::int64_t end_ns) {
  field(w, "ph", "X");
  field(w, "cat", cat);
  field(w, "name", name);
  field(w, "pid", pid);
  field(w, "tid", tid);
  key(w, "ts");
  write_us(w, start_ns);
  key(w, "dur");
  write_us(w, end_ns - start_ns);
}

void write_nccl_args(JsonWriter& w, const NcclGroup& group) {
  traces::Collective collective = traces::Collective::Unknown;
  std::int64_t bytes = 0;
  bool sized = false;
  for (std::size_t i = 0; i < group.calls.size(); ++i) {
    const NcclCall& call = group.calls[i];
    if (i == 0) collective = call.collective;
    if (call.collective != collective) collective = traces::Collective::Unknown;
    if (call.bytes >= 0) {
      bytes += call.bytes;
      sized = true;
    }
  }
  if (collective != traces::Collective::Unknown) {
    field(w, "Collective name", collective_text(collective));
  }
  if (sized) {
    field(w, "In msg nelems", bytes);
    field(w, "Out msg nelems", bytes);
    field(w, "dtype", "Byte");
  }
  key(w, "peers");
  w.StartArray();
  for (const NcclCall& call : group.calls) {
    if (call.peer >= 0) w.Int(call.peer);
  }
  w.EndArray();
  key(w, "nccl_calls");
  w.StartArray();
  for (const NcclCall& call : group.calls) {
    w.StartObject();
    field(w, "function", call.function);
    field(w, "comm_hash", call.comm_hash);
    field(w, "bytes", call.bytes);
    field(w, "peer", call.peer);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string demangle(const std::string& name) {
  if (name.compare(0, 2, "_Z") != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

void write_chrome_trace(const Capture& c, std::ostream& out) {
  std::unordered_map<std::uint32_t, const LaunchRecord*> launches;
  launches.reserve(c.launches.size());
  for (const LaunchRecord& l : c.launches)
    launches[l.correlation] = &l;
  std::size_t unmatched = 0;
  for (const KernelRecord& k : c.kernels)
    unmatched += launches.count(k.correlation) == 0 ? 1 : 0;

  rapidjson::OStreamWrapper stream(out);
  JsonWriter w(stream);
  w.StartObject();
  key(w, "bubblesim_profiler");
  write_header(w, c, unmatched);
  key(w, "deviceProperties");
  w.StartArray();
  for (const DeviceName& d : c.header.devices) {
    w.StartObject();
    field(w, "id", d.id);
    field(w, "name", d.name);
    w.EndObject();
  }
  w.EndArray();
  key(w, "traceEvents");
  w.StartArray();
  const std::int64_t pid = c.header.pid;
  for (const RangeRecord& r : c.ranges) {
    w.StartObject();
    write_event_head(w, "user_annotation", r.name, pid, r.thread, r.start_ns, r.end_ns);
    key(w, "args");
    w.StartObject();
    field(w, "range", r.id);
    if (r.open) {
      field(w, "open", true);
    }
    w.EndObject();
    w.EndObject();
  }
  for (const LaunchRecord& l : c.launches) {
    w.StartObject();
    write_event_head(w, "cuda_runtime", launch_name(l.api), pid, l.thread, l.ts_ns, l.ts_ns);
    key(w, "args");
    w.StartObject();
    field(w, "correlation", l.correlation);
    if (l.range != kNoRange) {
      field(w, "range", l.range);
    }
    w.EndObject();
    w.EndObject();
  }
  for (const KernelRecord& k : c.kernels) {
    w.StartObject();
    write_event_head(w, "kernel", demangle(c.names.at(k.name)), k.device, k.stream, k.start_ns,
                     k.end_ns);
    key(w, "args");
    w.StartObject();
    field(w, "correlation", k.correlation);
    field(w, "device", k.device);
    field(w, "context", k.context);
    field(w, "stream", k.stream);
    key(w, "grid");
    w.StartArray();
    for (std::uint32_t g : k.grid)
      w.Uint(g);
    w.EndArray();
    key(w, "block");
    w.StartArray();
    for (std::uint32_t b : k.block)
      w.Uint(b);
    w.EndArray();
    if (k.graph) {
      field(w, "graph", true);
    }
    const auto launch = launches.find(k.correlation);
    if (launch != launches.end() && launch->second->nccl_group != kNoNcclGroup) {
      write_nccl_args(w, c.nccl_groups.at(static_cast<std::size_t>(launch->second->nccl_group)));
    }
    w.EndObject();
    w.EndObject();
  }
  for (const MemRecord& m : c.mems) {
    const bool copy = m.kind == MemKind::Memcpy;
    w.StartObject();
    write_event_head(w, copy ? "gpu_memcpy" : "gpu_memset", copy ? "Memcpy" : "Memset", m.device,
                     m.stream, m.start_ns, m.end_ns);
    key(w, "args");
    w.StartObject();
    field(w, "correlation", m.correlation);
    field(w, "device", m.device);
    field(w, "stream", m.stream);
    field(w, "bytes", m.bytes);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out << '\n';
}

std::string profile_file_name(const CaptureHeader& header) {
  return "bubblesim-profile.rank" +
         (header.rank >= 0 ? std::to_string(header.rank) : std::string("-")) + ".pid" +
         std::to_string(header.pid) + ".json";
}

void write_chrome_trace_file(const Capture& capture, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(tmp + ": cannot open for writing: " + std::strerror(errno));
    write_chrome_trace(capture, out);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(tmp + ": cannot write the profile");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp + " to it: " + std::strerror(e));
  }
}

}  // namespace bubblesim::profiler
