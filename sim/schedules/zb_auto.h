// Automatic zero-bubble schedules under an activation-memory limit (zero-bubble paper §3.1;
// ../shared/reference/zero-bubble.md §4). One stage per device, costs that may differ per
// stage, split backward (F, B, W).
//
//  zb-1p    limit p M_B per device (the memory of 1F1B).
//  zb-2p    limit 2p M_B.
//  zb-auto  limit --mem-limit (unit of --m-b; default p M_B).
//
// The scheduler builds each candidate by simulating as it goes. Every stage first runs a
// warm-up of as many F as fit before its first B can arrive (and within the limit; each stage
// at least one more than the next; or at most 1F1B's p - s, a choice; ending before or just
// after the first B arrives, a choice), then, whenever it is free, runs a ready B or F (one of
// them first, a choice; at most as many in flight as the warm-up ran, a choice), and fills
// gaps with W: a gap at
// least as long as a W, a shorter gap when leaving it idle would give this stage the most idle
// time so far (a choice), and whenever an F would not fit in memory. Remaining W run at the
// end. Where M_W > M_B a B allocates too: it waits for room (a pending W makes it), and an F
// is admitted only with room for one such B after it. The warm-up estimate takes a stage's
// first B to start when its input arrives, or (a choice) also not before the stage's own
// warm-up forwards are done. The search runs
// combinations of the yes/no choices in the order that most often wins,
// each run cut short once a stage has idled longer than the best span so far allows; then
// the best combination again with the small-gap W's held back where they would delay a B
// more than the stage below can absorb (its pending W's under 1-16 times the delay; delays
// of the B chain turn into idle time at the end, once the W's run out); then it
// times the handcrafted ZB-H2, or ZB-H1, whichever has the most memory that fits the limit
// (a sweep over its fixed order, far cheaper than a run), so the result is never worse than
// it. The shortest schedule is kept. The search tries kPlacementScale / ops^2 of the 64
// combinations (all 64 up to about 2,100 ops; p = 16, m = 64: 31; p = 32, m = 128: 1), and
// as many of the five thresholds as that budget pays beyond one run (none at p = 32,
// m = 128). With
// the improver (the registered generators' default) every run goes to its end and all are
// starts of improve_best_of (improve.h). The memory limit is checked
// on the returned schedule's memory accounting.
#pragma once

#include <string_view>
#include <vector>

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

class CostModel;

// The schedule with the shortest longest-stage span that the scheduler above finds for p
// devices and m microbatches with `costs` (one chunk per device), keeping every device's
// activation memory at or below its `limit` (one per device, in the unit of the costs' memory
// deltas). Throws InvalidArgument, naming the smallest feasible limit, when a limit is below
// what one microbatch needs on its device.
Schedule auto_zero_bubble(int p, int m, const CostModel& costs, const std::vector<double>& limit);

// Registers zb-1p, zb-2p and zb-auto.
void add_zb_auto_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
