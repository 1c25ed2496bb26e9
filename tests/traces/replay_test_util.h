// Shared by the replay tests (tests/traces/replay_test.cpp, the library; and
// tests/sim/cli/replay_cli_test.cpp, the command): a synthetic two-rank pipeline recorded on
// CPU with times worked out by hand.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

#include "sim/schedule.h"
#include "tests/temp_path.h"

namespace bubblesim::traces::testing {

inline const std::string kTraces = BUBBLESIM_SHARED_DATA "/traces/";

inline std::string temp(const std::string& name) {
  return bubblesim::testing::temp_path("replay_" + name);
}

// A labelled range "PP:<stage><letter><mb>" (PyTorch's letters: B is the full backward) from
// `start_ms` to `end_ms`, relative to 1 s on the trace clock.
struct Range {
  std::string name;
  double start_ms;
  double end_ms;
};

// A trace recorded on CPU (no GPU events) of one rank: its ranges, the optimizer step after
// each iteration (unless `optimizer_steps` is false), and every iteration repeated
// `iterations` times, 20 ms apart.
inline std::string cpu_trace(int pid, const std::vector<Range>& ranges, int iterations,
                             bool optimizer_steps = true) {
  std::string events;
  const auto add = [&](const std::string& name, double start_ms, double end_ms) {
    events += fmt::format(
        R"j({}{{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": {}, "tid": 1, "ts": {:.3f}, "dur": {:.3f}}})j",
        events.empty() ? "" : ",\n", name, pid, 1e6 + start_ms * 1e3, (end_ms - start_ms) * 1e3);
  };
  for (int i = 0; i < iterations; ++i) {
    for (const Range& r : ranges)
      add(r.name, r.start_ms + 20.0 * i, r.end_ms + 20.0 * i);
    if (optimizer_steps) add("Optimizer.step#SGD.step", 15 + 20.0 * i, 16 + 20.0 * i);
  }
  return "{\"traceEvents\": [\n" + events + "\n]}\n";
}

// GPipe on two ranks, two microbatches, stage 0 on rank 0 and stage 1 on rank 1; F takes 1 ms
// and the backward 2 ms. By hand, with no transfer time: rank 1 waits 1 ms for 0F0 before 1F0;
// its backwards run 3-5 and 5-7; rank 0's backwards wait for them: 5-7 and 7-9. The iteration
// is 9 ms. `late_ms` delays rank 0's last backward by that much idle time (no dependency
// explains it), which the replay does not have.
inline std::vector<std::string> gpipe_traces(const std::string& name, double late_ms = 0,
                                             int iterations = 2, bool optimizer_steps = true) {
  const std::vector<Range> rank0 = {
      {"PP:0F0", 0, 1}, {"PP:0F1", 1, 2}, {"PP:0B0", 5, 7}, {"PP:0B1", 7 + late_ms, 9 + late_ms}};
  const std::vector<Range> rank1 = {
      {"PP:1F0", 1, 2}, {"PP:1F1", 2, 3}, {"PP:1B0", 3, 5}, {"PP:1B1", 5, 7}};
  std::vector<std::string> paths;
  int rank = 0;
  for (const auto* ranges : {&rank0, &rank1}) {
    paths.push_back(temp(name + "_rank" + std::to_string(rank) + ".json"));
    std::ofstream(paths.back()) << cpu_trace(500 + rank, *ranges, iterations, optimizer_steps);
    ++rank;
  }
  return paths;
}

inline sim::Op op(sim::OpKind kind, int stage, int mb) {
  return sim::Op{kind, stage, 0, mb};
}

}  // namespace bubblesim::traces::testing
