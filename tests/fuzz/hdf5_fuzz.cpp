// The HDF5 readers (BUBBLESIM_FUZZ_HDF5: 1 profile, 2 results) on the fuzzer's bytes as a file.
// The guard (analysis/hdf5_guard.h) runs as it does for users: a file on which libhdf5 itself
// crashes or loops is refused in one line; what libhdf5 reads is checked by bubblesim's code.
#include "sim/error.h"
#include "tests/fuzz/fuzz_input.h"
#if BUBBLESIM_FUZZ_HDF5 == 1
#include "analysis/profile_file.h"
#else
#include "analysis/report.h"
#include "analysis/results_file.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = bubblesim::fuzz::as_file(data, size, ".h5");
  try {
#if BUBBLESIM_FUZZ_HDF5 == 1
    bubblesim::analysis::read_profile(path);
#else
    bubblesim::analysis::load_report(path);
#endif
  } catch (const bubblesim::Error&) {
  }
  return 0;
}
