#include "profiler/cupti_decode.h"

#include <cupti.h>

#include <unordered_map>

namespace bubblesim::profiler {

namespace {

#if CUPTI_API_VERSION >= 130100
using KernelActivity = CUpti_ActivityKernel11;
#else
using KernelActivity = CUpti_ActivityKernel10;
#endif

bool no_timing(std::uint64_t start, std::uint64_t end) {
  return start == 0 && end == 0;
}

// A memcpy, peer-to-peer memcpy or memset record (their layouts share these field names),
// unless CUPTI gave it no timestamps.
template <class Activity>
void add_mem(const CUpti_Activity* record, MemKind kind, DecodedRecords& out) {
  const auto* m = reinterpret_cast<const Activity*>(record);
  if (no_timing(m->start, m->end)) {
    ++out.counters.zero_timestamp_records;
    return;
  }
  out.mems.push_back(MemRecord{kind, static_cast<std::int64_t>(m->start),
                               static_cast<std::int64_t>(m->end), m->bytes, m->deviceId,
                               m->streamId, m->correlationId});
}

}  // namespace

DecodedRecords decode_activity_buffer(std::uint8_t* buffer, std::size_t valid_bytes) {
  DecodedRecords out;
  out.counters.buffers_completed = 1;
  if (buffer == nullptr || valid_bytes == 0) return out;
  std::unordered_map<const char*, std::uint32_t> names;
  const auto intern = [&](const char* name) {
    const auto [it, fresh] = names.emplace(name, static_cast<std::uint32_t>(out.names.size()));
    if (fresh) out.names.emplace_back(name != nullptr ? name : "");
    return it->second;
  };
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // the normal end
    if (status != CUPTI_SUCCESS) {
      ++out.counters.incomplete_buffers;
      break;
    }
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const KernelActivity*>(record);
        if (no_timing(k->start, k->end)) {
          ++out.counters.zero_timestamp_records;
          break;
        }
        KernelRecord r;
        r.start_ns = static_cast<std::int64_t>(k->start);
        r.end_ns = static_cast<std::int64_t>(k->end);
        r.device = k->deviceId;
        r.context = k->contextId;
        r.stream = k->streamId;
        r.correlation = k->correlationId;
        r.grid[0] = static_cast<std::uint32_t>(k->gridX);
        r.grid[1] = static_cast<std::uint32_t>(k->gridY);
        r.grid[2] = static_cast<std::uint32_t>(k->gridZ);
        r.block[0] = static_cast<std::uint32_t>(k->blockX);
        r.block[1] = static_cast<std::uint32_t>(k->blockY);
        r.block[2] = static_cast<std::uint32_t>(k->blockZ);
        r.name = intern(k->name);
        r.graph = k->graphId != 0;
        out.kernels.push_back(r);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        add_mem<CUpti_ActivityMemcpy6>(record, MemKind::Memcpy, out);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        add_mem<CUpti_ActivityMemcpyPtoP4>(record, MemKind::Memcpy, out);
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        add_mem<CUpti_ActivityMemset4>(record, MemKind::Memset, out);
        break;
      default:
        ++out.counters.other_records;
        break;
    }
  }
  return out;
}

}  // namespace bubblesim::profiler
