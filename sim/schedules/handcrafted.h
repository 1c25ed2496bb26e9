// The handcrafted single-chunk schedules: GPipe, 1F1B, ZB-H1 and ZB-H2.
//
// All four place stage s on device s (p stages, p devices) and order each device's ops as in
// ../shared/reference/zero-bubble.md §3 (device r is 0-based; microbatches of each pass run in
// increasing order; "F" below means the device's next forward, and so on):
//
//  gpipe  m F, then m BW.                           Bubble (p-1)(T_F+T_B+T_W), peak m M_B.
//  1f1b   w = min(p-1-r, m) warm-up F; then for i = 0..m-1: F while w+i < m, BW.
//                                                   Bubble (p-1)(T_F+T_B+T_W), peak min(p,m) M_B.
//  zb-h1  as 1f1b with B and W split; W follows B from i >= r on; the last r W close the
//         device's order.                       Bubble (p-1)(T_F+T_B-T_W), peak min(p,m) M_B.
//  zb-h2  w = min(2(p-1-r), m) warm-up F; then for i = 0..m-1: F while w+i < m, B, and W
//         when i >= 2r; then the remaining W.  For m >= 2p-1: bubble
//         (p-1)(T_F+T_B+2T_comm-2T_W), peak (2p-1) M_B.
//         For m < 2p-1 the warm-up is capped at m (a device cannot run more forwards than there
//         are microbatches): device r runs min(2(p-1-r)+1, m) forwards before its first B and
//         holds back its W until i >= 2r as always, so the schedule stays valid. The
//         parallelogram then lacks 2p-1-m microbatches and each costs one T_W of bubble: with
//         T_comm = 0 the bubble is (p-1)(T_F+T_B-2T_W) + (2p-1-m) T_W and the peak m M_B.
//
// The closed forms hold when every device has the same costs and T_W <= min(T_F, T_B), with
// T_comm = 0 except where T_comm appears; the tests check them over a grid of p and m.
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Registers gpipe, 1f1b, zb-h1 and zb-h2, in that order.
void add_handcrafted_schedules(ScheduleRegistry& registry);

}  // namespace bubblesim::sim
