// The profiler's own trace files (profiler/chrome_writer.h: bubblesim_op events, NVTX ranges,
// CUPTI kernels) through the importer, once with the pipelining labels and once with a
// --label-regex of named groups.
#include "sim/error.h"
#include "tests/fuzz/fuzz_input.h"
#include "traces/kineto_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = bubblesim::fuzz::as_file(data, size, ".json");
  static const bubblesim::traces::RegexLabeller regex(
      "(?<name>.*)\\((?<pass>[FBW])\\)(?<stage>[0-9]*)");
  static const bubblesim::traces::PipeliningLabeller pipelining;
  for (const bubblesim::traces::RangeLabeller* labeller :
       {static_cast<const bubblesim::traces::RangeLabeller*>(&pipelining),
        static_cast<const bubblesim::traces::RangeLabeller*>(&regex)}) {
    try {
      bubblesim::traces::import_kineto_traces({path}, *labeller);
    } catch (const bubblesim::Error&) {
    }
  }
  return 0;
}
