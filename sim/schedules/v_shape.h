// V-shaped schedules: 2p stages, device i holds stage i (chunk 0) and stage 2p-1-i (chunk 1),
// so each microbatch's forward starts and its backward ends on device 0.
//
//  zb-v  The V-shaped zero-bubble schedule under an activation-memory limit (default p M_B,
//        as much as 1F1B holds; --mem-limit changes it). Built by simulating as it goes: each
//        device, when free, runs a ready B, else a ready F that fits in memory, else a pending
//        W (W fills what would be idle time and frees memory), else waits for the earliest
//        input. A few yes/no choices (F before B when both are ready; which chunk's F and
//        which stage's B go first; keep room for a chunk-1 F; wait for long gaps before a W)
//        and a cap on the chunk-0 microbatches in flight (7/8 of what fits in memory, none,
//        p, ...) are searched, the shortest result kept (the first with zero bubble). The
//        search is bounded by the ops it simulates: small pipelines try every combination;
//        from about p = 32, m = 256 (49k ops a run) it runs the greedy once: at the 7/8 cap,
//        which keeps chunk 0 from starving chunk 1 of memory, or uncapped when every
//        transfer is free (generation takes a few ms).
//        For small pipelines (p * cap * 32 runs within 1M simulated ops) the choices are
//        then refined per device by coordinate descent.
//        The greedy takes each op's cost to depend on its kind and stage only, not on its
//        microbatch (generate() checks it against the cost model).
//        With T_F = T_B = T_W and T_comm = 0 it reaches zero bubble at peak p M_B for
//        m >= 2p (the tests check p up to 16, and 32). The limit is never exceeded.
//  v-half, v-min  The same search under (p+2)/2 M_B and floor((p+4)/3) M_B (the
//        controllable-memory schedules: half and a third of 1F1B's memory), also trying caps
//        around 3p/4 on the chunk-0 microbatches in flight. With unit costs they meet the
//        published bubble rates for V-Half at p=4, m=8 and p=8, m=24 and for V-Min at p=4,
//        m=8 (which needs per-device choices) and p=8, m=24.
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Registers zb-v, v-half and v-min.
void add_v_shape_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
