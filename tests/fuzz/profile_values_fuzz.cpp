// The HDF5 profile reader and `simulate --profile` on profiles of any values. The bytes, read with
// libFuzzer's FuzzedDataProvider, make a traces::Profile (passes of any kind, stage, microbatch,
// chunk and times; comms; devices; counters), which bubblesim's own writer stores as a sound HDF5
// file; `simulate --profile` must then run or refuse it with one line (exit status 2). Beside
// profile_h5 (the fuzzer's bytes as the file: libhdf5's parsing behind the damaged-file guard, a
// forked child per input, 16-18 inputs a second), libhdf5 reads sound files here, so the guard is
// off and an input takes milliseconds: bubblesim's checks of the values libhdf5 hands it, at
// fuzzing speed.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/profile_file.h"
#include "sim/error.h"
#include "tests/fuzz/cli_run.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzzed_values.h"

namespace {

using bubblesim::fuzz::fuzzed_number;

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
        s.label.stage =
            in.ConsumeIntegralInRange<int>(0, 7) < 7 ? stage : fuzzed_number<std::int32_t>(in);
        s.label.microbatch =
            in.ConsumeIntegralInRange<int>(0, 7) < 7 ? round : fuzzed_number<std::int32_t>(in);
        s.label.chunk = in.ConsumeBool() ? traces::kNoNumber : fuzzed_number<std::int32_t>(in);
        s.trace = fuzzed_number<std::int32_t>(in);
        s.process = fuzzed_number<std::int64_t>(in);
        s.gpu_start_ns = fuzzed_number<std::int64_t>(in, 1000);
        // The end: the start plus a span, or any value where that sum overflows.
        const std::int64_t span = fuzzed_number<std::int64_t>(in, 1000);
        if (__builtin_add_overflow(s.gpu_start_ns, span, &s.gpu_end_ns)) s.gpu_end_ns = span;
        s.kernel_ns = fuzzed_number<std::int64_t>(in, 1000);
        s.gpu_ops = fuzzed_number<std::uint32_t>(in);
        profile.passes.push_back(s);
      }
    }
  }
  const int comms = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < comms; ++i) {
    traces::CommSample c;
    c.collective = static_cast<traces::Collective>(
        in.ConsumeIntegralInRange<int>(0, traces::kNumCollectives - 1));
    c.trace = fuzzed_number<std::int32_t>(in);
    c.device = fuzzed_number<std::int32_t>(in);
    c.start_ns = fuzzed_number<std::int64_t>(in, 1000);
    c.duration_ns = fuzzed_number<std::int64_t>(in, 1000);
    c.in_bytes = fuzzed_number<std::int64_t>(in, 1024);
    c.out_bytes = fuzzed_number<std::int64_t>(in, 1024);
    profile.comms.push_back(c);
  }
  const int devices = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < devices; ++i) {
    traces::DeviceInfo d;
    d.trace = fuzzed_number<std::int32_t>(in);
    d.device = fuzzed_number<std::int32_t>(in);
    d.name = in.ConsumeRandomLengthString(16);
    d.kernels = fuzzed_number<std::uint32_t>(in);
    profile.devices.push_back(d);
  }
  profile.kernels = fuzzed_number<std::uint32_t>(in);
  profile.total_kernel_ns = fuzzed_number<std::int64_t>(in, 1000);
  profile.cpu_timed_passes = fuzzed_number<std::uint16_t>(in);
  return profile;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("BUBBLESIM_HDF5_GUARD", "0", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = bubblesim::fuzz::temporary_path("-profile.h5");
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
  bubblesim::fuzz::run_cli_cleanly(args);
  return 0;
}
