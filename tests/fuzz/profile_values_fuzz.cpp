// The HDF5 profile reader and `simulate --profile` on profiles of any values. The bytes, read with
// libFuzzer's FuzzedDataProvider, make a traces::Profile (passes of any kind, stage, microbatch,
// chunk and times; comms; devices; counters), which bubblesim's own writer stores as a sound HDF5
// file; `simulate --profile` must then run or refuse it with one line (exit status 2). Beside
// profile_h5 (the fuzzer's bytes as the file: libhdf5's parsing behind the damaged-file guard, a
// forked child per input, 16-18 inputs a second), libhdf5 reads sound files here, so the guard is
// off and an input takes milliseconds: bubblesim's checks of the values libhdf5 hands it, at
// fuzzing speed.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/profile_file.h"
#include "sim/cli/cli.h"
#include "sim/error.h"
#include "tests/removed_at_exit.h"

namespace {

// Mostly a small number times `scale` (stages and microbatches a schedule has; times of a few
// microseconds), now and then a negative one or an edge of the type, where overflows live. On
// exhausted input: 0.
template <typename T>
T number(FuzzedDataProvider& in, T scale = 1) {
  const int pick = in.ConsumeIntegralInRange<int>(0, 15);
  if (pick <= 12) return static_cast<T>(in.ConsumeIntegralInRange<int>(0, 40) * scale);
  if (pick == 13) return static_cast<T>(-in.ConsumeIntegralInRange<int>(1, 40));
  if (pick == 14) return std::numeric_limits<T>::max();
  return in.ConsumeBool() ? std::numeric_limits<T>::min() : in.ConsumeIntegral<T>();
}

// Rounds of samples of F, B and W (or BW) of stages 0 to S-1, as an import of a real trace gives,
// each field of any value.
bubblesim::traces::Profile profile_of(FuzzedDataProvider& in) {
  using namespace bubblesim;
  traces::Profile profile;
  const int stages = in.ConsumeIntegralInRange<int>(1, 4);
  const int rounds = in.ConsumeIntegralInRange<int>(1, 4);
  for (int round = 0; round < rounds; ++round) {
    for (int stage = 0; stage < stages; ++stage) {
      for (const int kind : {0, 1, 2}) {
        traces::PassSample s;
        s.label.pass = static_cast<sim::OpKind>(in.ConsumeBool() ? 3 : kind);
        // The sample's own stage and round mostly, anything now and then.
        s.label.stage = in.ConsumeIntegralInRange<int>(0, 7) < 7 ? stage : number<std::int32_t>(in);
        s.label.microbatch =
            in.ConsumeIntegralInRange<int>(0, 7) < 7 ? round : number<std::int32_t>(in);
        s.label.chunk = in.ConsumeBool() ? traces::kNoNumber : number<std::int32_t>(in);
        s.trace = number<std::int32_t>(in);
        s.process = number<std::int64_t>(in);
        s.gpu_start_ns = number<std::int64_t>(in, 1000);
        // The end: the start plus a span, or any value where that sum overflows.
        const std::int64_t span = number<std::int64_t>(in, 1000);
        if (__builtin_add_overflow(s.gpu_start_ns, span, &s.gpu_end_ns)) s.gpu_end_ns = span;
        s.kernel_ns = number<std::int64_t>(in, 1000);
        s.gpu_ops = number<std::uint32_t>(in);
        profile.passes.push_back(s);
      }
    }
  }
  const int comms = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < comms; ++i) {
    traces::CommSample c;
    c.collective = static_cast<traces::Collective>(
        in.ConsumeIntegralInRange<int>(0, traces::kNumCollectives - 1));
    c.trace = number<std::int32_t>(in);
    c.device = number<std::int32_t>(in);
    c.start_ns = number<std::int64_t>(in, 1000);
    c.duration_ns = number<std::int64_t>(in, 1000);
    c.in_bytes = number<std::int64_t>(in, 1024);
    c.out_bytes = number<std::int64_t>(in, 1024);
    profile.comms.push_back(c);
  }
  const int devices = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < devices; ++i) {
    traces::DeviceInfo d;
    d.trace = number<std::int32_t>(in);
    d.device = number<std::int32_t>(in);
    d.name = in.ConsumeRandomLengthString(16);
    d.kernels = number<std::uint32_t>(in);
    profile.devices.push_back(d);
  }
  profile.kernels = number<std::uint32_t>(in);
  profile.total_kernel_ns = number<std::int64_t>(in, 1000);
  profile.cpu_timed_passes = number<std::uint16_t>(in);
  return profile;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("BUBBLESIM_HDF5_GUARD", "0", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static bubblesim::testing::RemovedAtExit written;
  const char* tmp = std::getenv("TMPDIR");
  static const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") +
                                  "/bubblesim-fuzz-profile-" + std::to_string(::getpid()) + ".h5";
  written.add(path);
  FuzzedDataProvider in(data, size);
  const std::string schedule = in.PickValueInArray({"1f1b", "zb-h1", "1f1b-i", "dualpipe-v"});
  std::vector<std::string> args = {"simulate",  "--max-memory", "0.05", "--no-improve",
                                   "--profile", path,           "-s",   schedule};
  if (in.ConsumeBool()) {
    args.push_back("-m");
    args.push_back(std::to_string(in.ConsumeIntegralInRange<int>(1, 16)));
  }
  try {
    bubblesim::analysis::write_profile(path, profile_of(in), {"fuzz", "profile_values_fuzz"});
  } catch (const bubblesim::Error&) {
    return 0;  // values the writer itself refuses
  }
  std::ostringstream out, err;
  const int status = bubblesim::cli::run(args, out, err);
  const std::string e = err.str();
  const auto lines = static_cast<int>(std::count(e.begin(), e.end(), '\n'));
  if (status == 2 && lines != 1) std::abort();   // bad input: one line
  if (status != 0 && status != 2) std::abort();  // no internal errors
  return 0;
}
