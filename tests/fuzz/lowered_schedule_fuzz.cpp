// The lowered schedule CSV (traces/schedule_csv.h: passes plus SEND/RECV, UNSHARD, RESHARD,
// REDUCE_GRAD actions) and its timing (traces/lowered_timing.h). Properties of every accepted
// file: the compute-only parser reads the same schedule; the schedule written in the lowered
// format reads back to itself; it times in both transfer modes or names a deadlock; without
// actions (and for the written file), async timing is the engine's.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "sim/cost_model.h"
#include "sim/error.h"
#include "sim/simulation.h"
#include "traces/lowered_timing.h"
#include "traces/schedule_csv.h"

namespace {

using bubblesim::traces::ScheduleFile;

ScheduleFile parse(const std::string& text, const char* name) {
  std::istringstream in(text);
  return bubblesim::traces::parse_schedule_file(in, name);
}

int chunks_of(const bubblesim::sim::Schedule& schedule) {
  int chunks = 1;
  for (const int c : schedule.stage_chunks())
    chunks = std::max(chunks, c + 1);
  return chunks;
}

// Async timing of `file` equals the engine's on its schedule (files whose actions add nothing).
void check_engine_timing(const ScheduleFile& file, const bubblesim::sim::CostModel& costs) {
  const auto lowered = bubblesim::traces::simulate_lowered(file, costs,
                                                           bubblesim::sim::P2pMode::Async);
  if (lowered.device_ops != bubblesim::sim::simulate(file.schedule, costs).timeline.device_ops)
    std::abort();
}

void check(const std::string& text) {
  namespace sim = bubblesim::sim;
  ScheduleFile file;
  try {
    file = parse(text, "fuzz.csv");
  } catch (const bubblesim::Error&) {
    return;
  }
  std::istringstream in(text);
  if (bubblesim::traces::parse_schedule_csv(in, "compute.csv").device_ops !=
      file.schedule.device_ops)
    std::abort();
  const auto costs = sim::PerDeviceCostModel::uniform(
      {sim::ms_to_ns(3), sim::ms_to_ns(4), sim::ms_to_ns(2), sim::ms_to_ns(0.7), 1, 0.5, 0.3},
      file.schedule.num_devices(), chunks_of(file.schedule));
  for (const sim::P2pMode mode : {sim::P2pMode::Async, sim::P2pMode::Blocking}) {
    try {
      bubblesim::traces::simulate_lowered(file, costs, mode, {sim::ms_to_ns(1), 2, 3});
    } catch (const bubblesim::traces::ScheduleFileError&) {
      // the file's order deadlocks
    }
  }
  if (!file.has_actions()) check_engine_timing(file, costs);
  std::ostringstream out;
  try {
    bubblesim::traces::write_schedule_csv(out, file.schedule,
                                          bubblesim::traces::CsvFormat::Comms);
  } catch (const bubblesim::Error&) {
    return;  // routes a file cannot express
  }
  const ScheduleFile back = parse(out.str(), "again.csv");
  if (back.schedule.device_ops != file.schedule.device_ops) std::abort();
  check_engine_timing(back, costs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
