// DeepSeek's bidirectional schedules, DualPipe and DualPipeV (../shared/reference/zero-bubble.md
// §6), with each device's order as in DeepSeek's reference implementation.
//
//  dualpipe    p ranks (p even), a model of p stages held twice: microbatches enter from both
//              ends. Represented with 2p stages and two routes (Schedule::routes): microbatches
//              0..m/2-1 run stages 0..p-1 on ranks 0..p-1; microbatches m/2..m-1 run the mirrored
//              copy, stages p..2p-1 on ranks p-1..0 (stage p+k on rank p-1-k). So rank r holds
//              stage r (chunk 0) and stage 2p-1-r (chunk 1): the V placement, each route one arm
//              of the V. A microbatch passes one stage per rank, so v = 1 (each pass costs the
//              whole --f/--b/--w, F allocates M_B), and every rank holds two stages' parameters:
//              2x those of 1F1B on the same ranks. Needs m even and m >= 2p.
//  dualpipe-v  DualPipe cut in half: p devices, 2p stages in a V (device r holds stages r and
//              2p-1-r), every microbatch runs all of them, v = 2 as in zb-v (a pass costs half
//              of --f/--b/--w). Parameters per device: those of 1F1B on the same p devices (the
//              DeepSeek README's "2x" compares with 1F1B on 2p devices, one per stage).
//              Needs m >= 2p.
//
// Each rank runs the eight steps of DeepSeek's code. For DualPipeV rank r of R = p, with N = m
// microbatches per chunk; for DualPipe rank r as half-rank h = min(r, p-1-r) of R = p/2 with
// N = m/2 per direction, chunk 0 being the direction that enters on its side (ranks in the
// second half swap the two). "F0" is the next forward of chunk 0, "B1" the next backward of
// chunk 1 (BW, or with zero bubble B and later W), "W" the oldest W pending; "F0&B1" an
// overlapped pair (one compute slot, Schedule::overlapped_pairs).
//   1. 2(R-h-1) x F0                   5. (R-h-1) x [B1, F1&B0]
//   2. (h+1) x [F0, F1]                 6. (h+1) x [B1, B0], split (B then W) from the middle on
//   3. (R-h-1) x [B1 split, W, F1]      7. (R-h-1) x [W, B0 split]
//   4. (N-2R+h+1) x [F0&B1, F1&B0]     8. (h+1) x W
// except that the middle ranks (h = R-1) run their first F0 and B1 of step 4 one after the
// other, not overlapped. Step 6 splits the backwards from iteration floor((h+1)/2) on: for odd
// h from its B1, for even h from its B0 (so exactly h+1 of them leave a W).
//
// Overlapped pairs take max(F, B) + (1 - e) min(F, B), e = the cost model's overlap efficiency
// (CostModel::overlapped_ns, overlapped_pair_ns). Bubble with unit costs, T_F = T_B = T_W = 1
// pass unit (so BW = 2 and a pair F&BW = 3 - e), T_comm = 0, and PP the number of stages a
// microbatch runs (p for dualpipe, 2p for dualpipe-v): the rank of half-index h (h as above,
// r for dualpipe-v) idles between its first and its last op for
//     (1 - e)(PP - 2 - h) + e     when h < PP/2 - 1,
//     (1 - e)(PP - 2 - h)         on the middle ranks (h = PP/2 - 1),
// whatever m. The first and last ranks (h = 0) idle most: (1 - e)(PP - 2) + e for PP >= 4 (0 for
// PP = 2). (At p = 8, for instance, rank 0 waits (1 - e)(PP/2 - 1) + e before its first F1&B0
// pair and 1 - e before each of the PP/2 - 1 pairs of step 5.) With e = 0 this is exactly the
// DeepSeek README's (PP/2 - 1)(F&B + B - 3W), B the full backward (BW = 2) and F&B = 3:
// 2(PP/2 - 1). With e > 0 the README's formula, (PP/2 - 1)(2 - e), is higher than the
// simulation by (PP/2 - 2) e. For the first rank this is the sum of the waits counted above
// (tested); for the other ranks the form was read off simulations, not derived, and the tests
// check every rank's span against the dependency graph's longest paths (OpGraph) instead.
// Peak activation memory: PP + 1 microbatches of one stage on every device, i.e. (p + 1) M_B
// for dualpipe and (2p + 1)/2 M_B for dualpipe-v (2p + 1 chunk units).
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Registers dualpipe and dualpipe-v.
void add_dual_pipe_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
