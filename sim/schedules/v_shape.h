// V-shaped schedules: 2p stages, device i holds stage i (chunk 0) and stage 2p-1-i (chunk 1),
// so each microbatch's forward starts and its backward ends on device 0.
//
//  zb-v  The V-shaped zero-bubble schedule under an activation-memory limit (default p M_B,
//        as much as 1F1B holds; --mem-limit changes it). Built by simulating as it goes: each
//        device, when free, runs a ready B, else a ready F that fits in memory, else a pending
//        W (W fills what would be idle time and frees memory), else waits for the earliest
//        input. A few yes/no choices (F before B when both are ready; which chunk's F and
//        which stage's B go first; keep room for a chunk-1 F; wait for long gaps before a W),
//        without and with at most p chunk-0 microbatches in flight, are tried in every
//        combination with the real costs; the shortest result is kept (the first with zero
//        bubble).
//        With T_F = T_B = T_W and T_comm = 0 it reaches zero bubble at peak p M_B for
//        m >= 2p (the tests check p up to 16). The limit is never exceeded.
//  v-half, v-min  The same greedy under (p+2)/2 M_B and floor((p+4)/3) M_B (the
//        controllable-memory schedules: half and a third of 1F1B's memory), also trying caps
//        on the chunk-0 microbatches in flight. With unit costs it meets the published
//        bubble rates for V-Half at p=4, m=8 and p=8, m=24 and for V-Min at p=8, m=24; V-Min
//        at p=4, m=8 is above them (0.2258 against 0.1864).
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Registers zb-v, v-half and v-min.
void add_v_shape_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
