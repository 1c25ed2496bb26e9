// Decoding of CUPTI activity buffers into the plain records of capture.h. Needs cupti.h and
// libcupti (built only with the CUDA toolkit): the buffer is walked with
// cuptiActivityGetNextRecord, which steps by CUPTI's own size for each record kind, so the
// records must have the layouts of the CUPTI the library was compiled against
// (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4,
// CUpti_ActivityMemset4 for CUPTI 13.0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "profiler/collector.h"

namespace bubblesim::profiler {

// The kernels (kinds CONCURRENT_KERNEL and KERNEL), memcpys (MEMCPY, MEMCPY2) and memsets of
// the first `valid_bytes` bytes of `buffer`. Records with start == end == 0 (no timing: CUPTI
// ran out of device buffer) are counted in zero_timestamp_records and skipped; records of other
// kinds are counted in other_records; a walk that ends at a record CUPTI cannot read (a zeroed
// or invalid kind) counts one incomplete buffer. A record cut short by `valid_bytes` ends the
// walk silently: CUPTI reports it as the buffer's normal end. counters.buffers_completed is 1.
// Kernel names are copied (CUPTI owns its strings) and interned per buffer.
DecodedRecords decode_activity_buffer(std::uint8_t* buffer, std::size_t valid_bytes);

}  // namespace bubblesim::profiler
