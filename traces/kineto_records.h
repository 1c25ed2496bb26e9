// What the Kineto importer keeps of a trace while reading it (the SAX handler,
// kineto_handler.h) for the attribution that follows (kineto_attribution.h): compact records.
// Internal to traces/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/kineto_trace.h"
#include "traces/profile.h"

namespace bubblesim::traces {

// Deeper JSON is refused (a Chrome trace nests 4 levels): the handler stops the recursive parser
// there, so its recursion is bounded (the iterative parser trips UBSan inside RapidJSON).
constexpr int kMaxJsonDepth = 64;
// The longest event taken: the simulator's largest op time (1e9 ms). Sums of many stay far
// from int64's range.
constexpr sim::TimeNs kMaxDurationNs = 1'000'000'000'000'000;

using sim::TimeNs;

// Appends with growth by half, not doubling: the peak while a large vector moves is 2.5 times
// its records, not 3 times.
template <class T>
void append(std::vector<T>& v, const T& value) {
  if (v.size() == v.capacity()) v.reserve(v.size() + v.size() / 2 + 256);
  v.push_back(value);
}

enum class GpuOpType : std::uint8_t { Kernel, Memcpy, Memset, Nccl };

// The compact records kept while reading.
struct GpuOp {
  TimeNs start_ns;
  TimeNs dur_ns;
  std::uint64_t correlation;  // kNoCorrelation: none
  std::int32_t device;        // args.device, else pid
  GpuOpType type;
};
constexpr std::uint64_t kNoCorrelation = ~std::uint64_t{0};

struct Launch {
  std::uint64_t correlation;
  TimeNs ts_ns;
  std::int64_t process;
};

struct Range {
  TimeNs start_ns;
  TimeNs end_ns;
  std::int64_t key;  // process (CPU ranges) or device pid (GPU ranges)
  RangeLabel label;
  Collective collective;            // nccl:* ranges
  std::int64_t thread = kNoThread;  // the tid of a recorder event (its rank)
};

struct NcclKernel {
  std::uint32_t op;  // index into the GPU ops
  Collective from_name;
  Collective from_metadata;
  Collective from_annotation = Collective::Unknown;
  std::int64_t in_bytes;
  std::int64_t out_bytes;
};

// Everything read from one trace.
struct TraceRecords {
  std::vector<GpuOp> ops;
  std::vector<Launch> launches;
  std::vector<Range> cpu_ranges, gpu_ranges, nccl_ranges;
  std::vector<NcclKernel> nccl;
  std::vector<PassSample> direct;  // bubblesim_op events
  std::vector<TimeNs> boundaries;  // starts of the iteration ranges
  std::map<std::int32_t, std::string> device_names;
};

}  // namespace bubblesim::traces
