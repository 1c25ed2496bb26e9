#include "traces/profile_costs.h"

#include <algorithm>
#include <cmath>

namespace bubblesim::traces {

bool ProfileCosts::any_split() const {
  return std::any_of(stages.begin(), stages.end(),
                     [](const StageSamples& s) { return s.split_from_bw; });
}

ProfileCosts profile_costs(const Profile& profile, int stages, double b_share) {
  BUBBLESIM_CHECK(b_share > 0 && b_share < 1, "B's share of BW out of (0, 1)");
  int profile_stages = 0;
  for (const PassSample& p : profile.passes)
    profile_stages = std::max(profile_stages, p.label.stage + 1);
  if (profile_stages == 0) {
    throw InvalidArgument(
        "the profile has no pass samples with a stage number (ranges labelled "
        "PP:<stage><pass><microbatch>, or a --label-regex with a stage group)");
  }
  if (stages == 0) stages = profile_stages;
  if (profile_stages > stages) {
    throw InvalidArgument("the profile has " + std::to_string(profile_stages) +
                          " stages, more than the " + std::to_string(stages) +
                          " pipeline devices asked for (-p)");
  }
  std::vector<StageSamples> samples(static_cast<std::size_t>(stages));
  std::vector<std::vector<sim::TimeNs>> fused(samples.size());
  for (const PassSample& p : profile.passes) {
    if (p.label.stage < 0) continue;  // no stage: cannot be placed
    const auto s = static_cast<std::size_t>(p.label.stage);
    switch (p.label.pass) {
      case sim::OpKind::F:
        samples[s].f_ns.push_back(p.kernel_ns);
        break;
      case sim::OpKind::B:
        samples[s].b_ns.push_back(p.kernel_ns);
        break;
      case sim::OpKind::W:
        samples[s].w_ns.push_back(p.kernel_ns);
        break;
      case sim::OpKind::BW:
        fused[s].push_back(p.kernel_ns);
        break;
    }
  }
  std::string missing;
  const auto lack = [&](int stage, const char* what) {
    missing +=
        (missing.empty() ? "" : ", ") + std::string("stage ") + std::to_string(stage) + " " + what;
  };
  for (std::size_t s = 0; s < samples.size(); ++s) {
    StageSamples& stage = samples[s];
    const int number = static_cast<int>(s);
    if (stage.f_ns.empty()) lack(number, "F");
    if (!stage.b_ns.empty() && !stage.w_ns.empty()) continue;
    if (!fused[s].empty()) {
      // Fused backward only (or only one of B and W): split every BW sample by the FLOP ratio.
      stage.b_ns.clear();
      stage.w_ns.clear();
      for (const sim::TimeNs bw : fused[s]) {
        const auto b = static_cast<sim::TimeNs>(std::llround(static_cast<double>(bw) * b_share));
        stage.b_ns.push_back(b);
        stage.w_ns.push_back(bw - b);
      }
      stage.split_from_bw = true;
      continue;
    }
    if (stage.b_ns.empty() && stage.w_ns.empty()) {
      lack(number, "B and W (or fused BW)");
    } else {
      lack(number, stage.b_ns.empty() ? "B (or fused BW)" : "W (or fused BW)");
    }
  }
  if (!missing.empty()) throw InvalidArgument("the profile has no samples of " + missing);
  ProfileCosts costs{std::move(samples), {}};
  for (const CommSample& c : profile.comms) {
    if (c.collective == Collective::SendRecv) costs.comm_ns.push_back(c.duration_ns);
  }
  return costs;
}

}  // namespace bubblesim::traces
