// Interleaved 1F1B (Megatron-LM's "virtual pipeline"): v chunks per device, looped placement
// (stage s on device s mod p), fused backward.
//
// Device r (0-based) steps through m*v forward and m*v backward chunk passes. Pass k of a
// direction belongs to microbatch (k / (p v)) p + k mod p and to chunk (k / p) mod v
// (forwards) or v-1 - (k / p) mod v (backwards), so microbatches go in rounds of p. The device
// runs w = min((v-1) p + 2(p-1-r), m v) warm-up forwards, then alternates forward w+i and
// backward i, then drains the remaining backwards (../shared/reference/zero-bubble.md §3).
// Needs v >= 2 and m a multiple of p. Bubble with T_comm = 0 and equal costs:
// (p-1)(T_F+T_B+T_W)/v; peak about p M_B (1 + (p-1)/(p v)).
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Registers 1f1b-i.
void add_interleaved_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
