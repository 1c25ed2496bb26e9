// DeviceEvents: the event queue of the engine's watched runs and of the schedulers that
// simulate as they build (zb-v, zb-auto). Internal to sim/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "sim/op.h"

namespace bubblesim::sim {

inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

// The event queue: each device has at most one next event (its running op ends, or it wakes
// up when the input of its next op arrives), so the queue is a tournament tree over devices
// with 8 children per node: an update recomputes one minimum of 8 per level, and the 8
// comparisons of a level are independent of each other. Ties go to the lower device index,
// so the order of events is a function of the input alone.
class DeviceEvents {
 public:
  explicit DeviceEvents(std::size_t devices) {
    // Each level holds a multiple of 8 entries; the last one exactly 8, under the root.
    std::size_t width = std::max<std::size_t>(devices, 1);
    do {
      width = (width + kFanout - 1) / kFanout * kFanout;
      levels_.emplace_back(width, Entry{kNever, 0});
      width /= kFanout;
    } while (width > 1);
    for (std::size_t i = 0; i < levels_[0].size(); ++i)
      levels_[0][i].device = i;
    for (std::size_t l = 1; l < levels_.size(); ++l) {
      for (std::size_t i = 0; i < levels_[l - 1].size() / kFanout; ++i) {
        levels_[l][i] = min_of(levels_[l - 1], i);
      }
    }
    root_ = min_of(levels_.back(), 0);
  }

  std::size_t next_device() const { return root_.device; }
  TimeNs next_time() const { return root_.time_ns; }

  void set(std::size_t device, TimeNs time_ns) {
    levels_[0][device].time_ns = time_ns;
    std::size_t i = device / kFanout;
    for (std::size_t l = 1; l < levels_.size(); ++l, i /= kFanout) {
      levels_[l][i] = min_of(levels_[l - 1], i);
    }
    root_ = min_of(levels_.back(), 0);
  }

 private:
  static constexpr std::size_t kFanout = 8;
  struct Entry {
    TimeNs time_ns;  // the earliest event below, kNever if none
    std::size_t device;
  };

  // The earliest of children [8 group, 8 group + 8); the first wins ties. A pairwise
  // reduction, so that the comparisons form a tree of depth 3 rather than a chain of 7.
  static Entry min_of(const std::vector<Entry>& level, std::size_t group) {
    const Entry* c = level.data() + group * kFanout;
    const Entry a = earlier(earlier(c[0], c[1]), earlier(c[2], c[3]));
    const Entry b = earlier(earlier(c[4], c[5]), earlier(c[6], c[7]));
    return earlier(a, b);
  }
  // `first` unless `second` is strictly earlier.
  static Entry earlier(const Entry& first, const Entry& second) {
    const bool take = second.time_ns < first.time_ns;
    return Entry{take ? second.time_ns : first.time_ns, take ? second.device : first.device};
  }

  std::vector<std::vector<Entry>> levels_;  // levels_[0]: one entry per device, padded to 8
  Entry root_{kNever, 0};
};

}  // namespace bubblesim::sim
