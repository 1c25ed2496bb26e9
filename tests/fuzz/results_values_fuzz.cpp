// `bubblesim report` on sound results files of any values. The bytes, read with libFuzzer's
// FuzzedDataProvider, make one to three runs (parameters, summary, ops, transfers, memory rows
// and devices, each number mostly small, sometimes negative, NaN or infinite, or at its type's
// edges), which bubblesim's own writer stores as a sound HDF5 file; `report FILE --html PAGE`
// (tables, timelines and memory curves, with the transfers drawn) must then succeed or refuse it
// with one line (exit status 2). Beside results_h5 (the fuzzer's bytes as the file, behind the
// damaged-file guard, 16-18 inputs a second), libhdf5 reads sound files here, so the guard is off:
// bubblesim's checks of the values libhdf5 hands it, at fuzzing speed.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "analysis/results_file.h"
#include "sim/error.h"
#include "tests/fuzz/cli_run.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzzed_values.h"

namespace {

using bubblesim::fuzz::fuzzed_number;

// The same for doubles, with NaN and the infinities among the edges.
double real(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 13:
      return std::numeric_limits<double>::quiet_NaN();
    case 14:
      return in.ConsumeBool() ? std::numeric_limits<double>::infinity()
                              : -std::numeric_limits<double>::infinity();
    case 15:
      return in.ConsumeFloatingPoint<double>();
    default:
      return in.ConsumeIntegralInRange<int>(0, 400) / 10.0;
  }
}

bubblesim::analysis::RunRecord run_of(FuzzedDataProvider& in, int index) {
  using namespace bubblesim;
  analysis::RunRecord run;
  run.name = "run" + std::to_string(index);
  run.bubblesim_version = "fuzz";
  run.command_line = in.ConsumeRandomLengthString(12);
  analysis::RunParameters& p = run.parameters;
  p.schedule = in.PickValueInArray({"1f1b", "zb-h1", "zb-v", "dualpipe", ""});
  p.pp = in.ConsumeIntegralInRange<int>(0, 15) < 15 ? in.ConsumeIntegralInRange<int>(1, 4)
                                                    : fuzzed_number<std::int32_t>(in);
  p.microbatches = fuzzed_number<std::int32_t>(in);
  p.chunks = fuzzed_number<std::int32_t>(in);
  const int devices = in.ConsumeIntegralInRange<int>(0, 4);
  for (int d = 0; d < devices; ++d) {
    p.f_ms.push_back(real(in));
    p.b_ms.push_back(real(in));
    p.w_ms.push_back(real(in));
    p.comm_ms.push_back(real(in));
  }
  p.m_b = real(in);
  p.m_w = real(in);
  p.mem_limit = real(in);
  run.summary = {real(in), real(in), real(in), real(in)};
  const int ops = in.ConsumeIntegralInRange<int>(0, 24);
  for (int i = 0; i < ops; ++i) {
    analysis::OpRecord op;
    op.device = fuzzed_number<std::int32_t>(in);
    op.stage = fuzzed_number<std::int32_t>(in);
    op.chunk = fuzzed_number<std::int32_t>(in);
    op.microbatch = fuzzed_number<std::int32_t>(in);
    op.kind = static_cast<sim::OpKind>(in.ConsumeIntegralInRange<int>(0, sim::kNumOpKinds - 1));
    op.start_ns = fuzzed_number<std::int64_t>(in, 1000);
    op.end_ns = fuzzed_number<std::int64_t>(in, 1000);
    run.ops.push_back(op);
  }
  const int transfers = in.ConsumeIntegralInRange<int>(0, 8);
  for (int i = 0; i < transfers; ++i) {
    run.transfers.push_back({fuzzed_number<std::int32_t>(in), fuzzed_number<std::int32_t>(in),
                             fuzzed_number<std::int64_t>(in, 1024),
                             fuzzed_number<std::int64_t>(in, 1000),
                             fuzzed_number<std::int64_t>(in, 1000)});
  }
  const int memory = in.ConsumeIntegralInRange<int>(0, 16);
  for (int i = 0; i < memory; ++i)
    run.memory.push_back(
        {fuzzed_number<std::int32_t>(in), fuzzed_number<std::int64_t>(in, 1000), real(in)});
  for (int d = 0; d < devices; ++d)
    run.devices.push_back(
        {fuzzed_number<std::int32_t>(in), real(in), real(in), real(in), real(in)});
  if (in.ConsumeBool()) run.extra_numbers.emplace_back("throughput", real(in));
  if (in.ConsumeBool()) run.extra_texts.emplace_back("allreduce", in.ConsumeRandomLengthString(8));
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("BUBBLESIM_HDF5_GUARD", "0", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string results = bubblesim::fuzz::temporary_path("-results.h5"),
                           page = bubblesim::fuzz::temporary_path("-report.html");
  FuzzedDataProvider in(data, size);
  std::vector<bubblesim::analysis::RunRecord> runs;
  const int count = in.ConsumeIntegralInRange<int>(1, 3);
  for (int i = 0; i < count; ++i)
    runs.push_back(run_of(in, i));
  ::unlink(results.c_str());
  try {
    bubblesim::analysis::write_runs(results, runs, {"fuzz", "results_values_fuzz"});
  } catch (const bubblesim::Error&) {
    return 0;  // values the writer itself refuses
  }
  std::vector<std::string> args = {"report", results, "--html", page, "--transfers"};
  if (in.ConsumeBool()) args.push_back("--json");
  bubblesim::fuzz::run_cli_cleanly(args);
  return 0;
}
