// PyTorch pipelining's compute-only schedule CSV (traces/schedule_csv.h), then its round trip:
// a schedule the parser accepts must write and parse back to itself.
#include <sstream>

#include "sim/error.h"
#include "tests/fuzz/fuzz_input.h"
#include "traces/schedule_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  bubblesim::sim::Schedule schedule;
  try {
    schedule = bubblesim::traces::parse_schedule_csv(in, "fuzz.csv");
  } catch (const bubblesim::Error&) {
    return 0;
  }
  std::ostringstream out;
  try {
    bubblesim::traces::write_schedule_csv(out, schedule);
  } catch (const bubblesim::Error&) {
    return 0;  // routes a file cannot express
  }
  std::istringstream again(out.str());
  const bubblesim::sim::Schedule back = bubblesim::traces::parse_schedule_csv(again, "again.csv");
  if (back.device_ops != schedule.device_ops) std::abort();
  return 0;
}
