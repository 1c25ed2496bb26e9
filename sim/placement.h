// Stage -> device placements (DESIGN.md §3). Each returns stage_device for Schedule.
#pragma once

#include <vector>

namespace bubblesim::sim {

// p * v stages, stage s on device s mod p (interleaved 1F1B).
std::vector<int> looped_placement(int devices, int chunks);

// 2p stages in a V: device i holds stage i and stage 2p-1-i (ZB-V, V-Half, V-Min), so a
// microbatch's forward starts and its backward ends on device 0.
std::vector<int> v_placement(int devices);

}  // namespace bubblesim::sim
