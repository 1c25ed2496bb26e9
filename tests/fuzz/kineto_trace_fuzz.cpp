// Kineto / Chrome trace JSON, plain or gzip (the reader decides by the gzip header), through
// the importer with PyTorch pipelining's labels. Bad input must be a bubblesim::Error.
#include "sim/error.h"
#include "tests/fuzz/fuzz_input.h"
#include "traces/kineto_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = bubblesim::fuzz::as_file(data, size, ".json");
  try {
    bubblesim::traces::import_kineto_traces({path}, bubblesim::traces::PipeliningLabeller());
  } catch (const bubblesim::Error&) {
  }
  return 0;
}
