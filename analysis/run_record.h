// The record of one simulated run: its inputs, summary metrics and every op, transfer and
// memory change, as plain values. This is what the HDF5 results store (results_file.h) writes
// and reads back; docs/results-format.md describes the file layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/op.h"
#include "sim/schedule.h"
#include "sim/simulation.h"

namespace bubblesim::analysis {

// What a run was simulated from (the command line's inputs, DESIGN.md §4).
struct RunParameters {
  std::string schedule;  // generator name ("zb-h1"), or the path of the schedule file
  std::int32_t pp = 0;
  std::int32_t microbatches = 0;
  std::int32_t chunks = 0;  // model chunks per device, v
  // Per device (size pp), in ms: the device's whole share of the model for one microbatch.
  std::vector<double> f_ms, b_ms, w_ms, comm_ms;
  double m_b = 0;  // activation memory an F allocates, any unit (the "activation unit")
  double m_w = 0;  // activation memory a B keeps for its W, same unit
  // --mem-limit as given, same unit: 0 means the schedule's default, inf no limit.
  double mem_limit = 0;

  friend bool operator==(const RunParameters&, const RunParameters&) = default;
};

// The JSON summary's scalar metrics (DESIGN.md §4).
struct RunSummaryMetrics {
  double iteration_time_ms = 0;
  double max_device_span_ms = 0;
  double bubble_rate = 0;
  double peak_activation_memory = 0;  // activation units (unit of m_b)

  friend bool operator==(const RunSummaryMetrics&, const RunSummaryMetrics&) = default;
};

struct OpRecord {
  std::int32_t device = 0;
  std::int32_t stage = 0;
  std::int32_t chunk = 0;
  std::int32_t microbatch = 0;
  sim::OpKind kind = sim::OpKind::F;
  sim::TimeNs start_ns = 0;
  sim::TimeNs end_ns = 0;

  friend bool operator==(const OpRecord&, const OpRecord&) = default;
};

// An op's output sent from one device to another.
struct TransferRecord {
  std::int32_t src_device = 0;
  std::int32_t dst_device = 0;
  // Size of the message: with --cluster the bytes the network carried, else 0.
  std::int64_t bytes = 0;
  sim::TimeNs start_ns = 0;  // the producer's end
  sim::TimeNs end_ns = 0;    // arrival on dst_device

  friend bool operator==(const TransferRecord&, const TransferRecord&) = default;
};

// The activation memory a device holds from `time_ns` on.
struct MemoryRecord {
  std::int32_t device = 0;
  sim::TimeNs time_ns = 0;
  double activation_memory = 0;  // activation units (unit of m_b)

  friend bool operator==(const MemoryRecord&, const MemoryRecord&) = default;
};

// The JSON summary's per-device metrics.
struct DeviceRecord {
  std::int32_t device = 0;
  double span_ms = 0;
  double busy_ms = 0;
  double bubble_rate = 0;
  double peak_activation_memory = 0;  // activation units

  friend bool operator==(const DeviceRecord&, const DeviceRecord&) = default;
};

struct RunRecord {
  std::string name;  // the run's group name under /runs: non-empty, no '/', not "." or ".."
  std::string bubblesim_version;  // of the program that simulated the run
  std::string command_line;       // that simulated it
  RunParameters parameters;
  RunSummaryMetrics summary;
  std::vector<OpRecord> ops;  // device by device, each in schedule order
  // In the engine's order: as they start, or with a network (--cluster) as they arrive.
  std::vector<TransferRecord> transfers;
  std::vector<MemoryRecord> memory;   // device by device, each in time order
  std::vector<DeviceRecord> devices;  // one per device, by device
  // The JSON summary's further scalar fields, in its order, where the run has them (with
  // --model, --cluster, --dp or --optimizer-sync: throughput, mfu, the all-reduce and optimizer
  // times, oom as 0/1...): numbers, and texts such as the all-reduce algorithm. Attributes of
  // the run group like the fields above; names are distinct and none of the fixed ones.
  std::vector<std::pair<std::string, double>> extra_numbers;
  std::vector<std::pair<std::string, std::string>> extra_texts;

  friend bool operator==(const RunRecord&, const RunRecord&) = default;
};

// Builds the record of `result`, the run of `schedule` with `costs`, whose transfers are
// `transfers` (a sim::TransferLog attached to that run). `record.name`, version, command line and
// parameters are copied from `header`; everything else is filled here.
//
// Memory: one row per op, the device's activation memory after the op's change, which takes
// effect at the op's start when it allocates and at its end when it frees (so each device's
// rows are in time order, and their running maximum is the device's peak).
RunRecord make_run_record(RunRecord header, const sim::Schedule& schedule,
                          const sim::CostModel& costs, const sim::SimulationResult& result,
                          std::span<const sim::TransferEvent> transfers);

}  // namespace bubblesim::analysis
