// V-shaped schedules: 2p stages, device i holds stage i (chunk 0) and stage 2p-1-i (chunk 1),
// so each microbatch's forward starts and its backward ends on device 0.
//
//  zb-v  The V-shaped zero-bubble schedule under an activation-memory limit (default p M_B,
//        as much as 1F1B holds; --mem-limit changes it). Built by simulating as it goes: each
//        device, when free, runs a ready B, else a ready F that fits in memory, else a pending
//        W (W fills what would be idle time and frees memory; unless memory binds, not one that
//        would delay a known B where the device that B feeds holds pending W's worth less than 4
//        times the delay, which it would pass on down the chain), else waits for the earliest
//        input. Yes/no choices shape the rules: F before B when both are ready; which chunk's F and
//        which stage's B go first, and whether the F's preference turns round after the device's
//        first B (the warm-up's is not the steady state's) and the B's (or the preference for
//        chunk 1's ops) once it has started all its chunk-0 forwards (its tail); keep room for a
//        chunk-1 F; a W only in a gap it fits (whole, or half of it: where the idle it fills
//        outweighs the delay it causes; both are tried); F and B taking turns after the first B;
//        lookahead (wait for the preferred op when its input arrives before the other op would end:
//        transfer time decides the choice between chunks and between F and B); feeding (between a
//        startable F and B, the one whose next device is free first). A cap on the chunk-0
//        microbatches in flight (what fits less two, falling to about half of it at the V's top: by
//        one per device at 1F1B's memory; none; 7/8 of what fits; p; ...) keeps room for the
//        chunk-1 forwards that arrive before the first B returns. The search runs combinations
//        nearest the one that wins most often first, and keeps the shortest result (the first with
//        zero bubble). Its budget is bounded by the ops it simulates, shrinking with the square of
//        the size: small pipelines try thousands of runs; p = 32, m = 256 (49k ops a run) runs the
//        greedy once or twice (a few ms). Where that pays for fewer than 4 runs and a pipeline of
//        6p microbatches pays for 16 within 200k ops (p up to 18), the choices are first searched
//        on that smaller pipeline and its best run once at the full size. The best choices run
//        again with an idle allowance per device (a device about to idle past it runs a pending W
//        instead of waiting): 1, 1.2 or 1.5 times what it may idle and still end with the
//        closed-form bound of the longest device (its work plus the warm-up it must wait for its
//        first chunk-1 forward, filled with the chunk-0 forwards that fit), and with the
//        preferences of the tail turned round (each, and both), and (at or above 1F1B's memory)
//        with every device's cap one higher, then one lower (the three bests before it one
//        higher), all again from any new best the caps give; then further
//        combinations, within a budget shrinking with the cube of the size (nothing more at p = 32,
//        m = 256). For small pipelines (p * cap * 32 runs within 5M simulated ops, 25M below 1F1B's
//        memory, where per-device choices matter most) the choices are
//        then refined per device by coordinate descent. Then single decisions of the best run
//        are forced against the rules (a W instead of an F or B, an F or B instead of a W or of
//        each other, at or above 1F1B's memory the other chunk's F), one device and position at
//        a time, the later decisions following the rules again; each that shortens the run is
//        kept (within 10M simulated ops up to 10,000 ops a run, falling with the fourth power
//        of the size: none from p = 32, m = 200 on); in two scans from the same run, device by
//        device and then the last decisions first (a quarter of the budget more), the shorter
//        result kept.
//        The greedy takes each op's cost to depend on its kind and stage only, not on its
//        microbatch (generate() checks it against the cost model).
//        With T_F = T_B = T_W and T_comm = 0 it reaches zero bubble at peak p M_B for
//        m >= 2p (the tests check p up to 16, and 32). The limit is never exceeded.
//        `bubblesim validate` compares it with the zero-bubble authors' own scheduler.
//        Unless the greedy reached zero bubble, repeated building blocks compete with it
//        (computed beside its search; the controllable-memory paper's construction): one
//        microbatch's ops on a cycle of period T per device, each at the earliest time its input
//        allows where the cycle is free, the block repeated every T, its memory checked in closed
//        form (on the repeated order itself where ops of a device start together: passes that take
//        no time). Laid out from the real costs (periods from the busiest device's work up to twice
//        it, the shortest that fit timed by the engine: 3 within 60k simulated ops); past 30k ops
//        the shortest that fits and, below 1F1B's memory, the unit-cost blocks with waits of at
//        most one step per chain that keep the shortest steady period under the real costs (the
//        maximum cycle ratio of the repeated order), each estimated from a short run and its
//        period, the better timed; and, for pipelines of at most 30k ops, with waits of 0-2 steps
//        after the ops of each chain and at the V's top (the 729 combinations over the forwards and
//        backwards of each chunk, the W's and the turn from chunk 0 to chunk 1 on device p-1), of
//        unit costs and of the real costs, within 1M simulated ops; the unit-cost ones also
//        squeezed at unit costs, as the paper does (rounds of justification under unit
//        costs; the order is then timed with the real costs), within 2M simulated ops. The
//        greedy's order at unit costs is one more candidate there. The same unit-cost blocks
//        with a wait of 1-2 steps at the V's bottom or at its top on the way down (which
//        moves whole chains to other steps of the cycle: where 2p is a multiple of 6, every
//        device's forward of one chunk and backward of the other fall on the same step without
//        it), within the same budget again, justified, replace the result where one is shorter
//        as it is (zb-v: 2 more reference rows at or below the authors', up to 1.2% shorter).
//        So do those layouts and the chains' ones squeezed as a list schedule (v_blocks.h,
//        backfilled_blocks: the repetition's ops in the order of their start, each as early as
//        its input, its device and the memory allow, at unit costs): the authors' V-Min and
//        its unit-cost spans where p is a multiple of 3 (6m + 4p - 7).
//        So does, for pipelines of at most 30k ops, the order the same search finds under
//        costs halfway between the real ones and unit costs (each op's time halfway to the
//        mean op time, transfers halved), timed with the real costs: an order that keeps the
//        shape of the costs without chasing their every detail (zb-v and V-Min: one more
//        reference row at or below the authors' each); not where every op takes the same time
//        and transfers are free, where that search is the greedy's own.
//        Every candidate is justified (sim/schedules/justify.h: packed right, then left within
//        the limit); for
//        pipelines of at most 30k ops the shortest is then spliced with each of the others
//        (sim/schedules/splice.h: one's ops up to a cut time, the other's order after it, 19
//        cuts, both ways round, within 4M simulated ops), rounds while a splice is shorter; all
//        of them, with the search's earlier bests, are the starts of the multi-start improver
//        (improve_best_of in sim/schedules/improve.h) within improve_budget_ops, and from
//        12,000 to 30,000 ops within 1.2e10 / ops simulated ops (v_improve_budget_ops).
//        Complexity: the search's and the blocks' budgets bound the ops simulated (a few
//        million); p = 32, m = 256 takes 6-13 ms on 2-core EPYC VMs, the simulation of the
//        result included (docs/benchmarks.md).
//  v-half, v-min  The same search under (p+2)/2 M_B and floor((p+4)/3) M_B (the
//        controllable-memory schedules: half and a third of 1F1B's memory), also trying caps
//        around 3p/4 on the chunk-0 microbatches in flight, and caps that fall by 1/3, 1/2 or
//        2/3 of a microbatch per device (as V-Min's chunk-0 lifespans do along the V). With unit
//        costs they meet the published bubble rates for V-Half at p=4, m=8 and p=8, m=24 and for
//        V-Min at p=4, m=8 (which needs per-device choices) and p=8, m=24.
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Registers zb-v, v-half and v-min.
void add_v_shape_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
