// Per-stage costs from a Profile, for `bubblesim simulate --profile` (issue 6).
//
// Each pipeline stage of the profile becomes one device's share of the model (stage s runs on
// device s; a schedule with v chunks runs each chunk in 1/v of it, as with --f/--b/--w). The
// samples of a (stage, pass) are the kernel times (PassSample::kernel_ns) of its ranges. A
// stage whose trace ran the fused backward only (BW samples, no B and W) has each BW sample
// split into B = round(BW * b_share) and W = BW - B. Communication: the durations of the
// profile's send/recv NCCL kernels, pooled over all devices.
#pragma once

#include <string>
#include <vector>

#include "sim/error.h"
#include "sim/op.h"
#include "traces/profile.h"

namespace bubblesim::traces {

struct StageSamples {
  std::vector<sim::TimeNs> f_ns, b_ns, w_ns;  // kernel times, in the profile's order
  bool split_from_bw = false;                 // B and W are split BW samples
};

struct ProfileCosts {
  std::vector<StageSamples> stages;  // one per stage, stage 0 first
  std::vector<sim::TimeNs> comm_ns;  // send/recv kernel durations; empty when none
  bool any_split() const;
};

// The samples of stages 0 .. stages-1; `stages` = 0 takes the profile's stage count (its
// largest stage number + 1). Throws InvalidArgument naming every (stage, pass) without
// samples, when the passes carry no stage numbers, or when the profile has stages >= `stages`.
// Precondition: 0 < b_share < 1.
ProfileCosts profile_costs(const Profile& profile, int stages, double b_share);

}  // namespace bubblesim::traces
