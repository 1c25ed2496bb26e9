#include "sim/placement.h"

namespace bubblesim::sim {

std::vector<int> looped_placement(int devices, int chunks) {
  std::vector<int> placement;
  for (int s = 0; s < devices * chunks; ++s)
    placement.push_back(s % devices);
  return placement;
}

std::vector<int> v_placement(int devices) {
  std::vector<int> placement;
  for (int s = 0; s < 2 * devices; ++s)
    placement.push_back(s < devices ? s : 2 * devices - 1 - s);
  return placement;
}

}  // namespace bubblesim::sim
