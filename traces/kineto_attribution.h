// The attribution of the Kineto importer: each GPU op to the innermost labelled range of the
// process that launched it (by correlation id), NCCL kernels to their collectives, passes and
// iterations, added to a Profile. Internal to traces/.
#pragma once

#include <cstdint>

#include "traces/kineto_records.h"

namespace bubblesim::traces {

// Attributes the records of trace number `trace` (sorting them) and adds them to `profile`.
void add_trace(TraceRecords& r, std::int32_t trace, Profile& profile);

}  // namespace bubblesim::traces
