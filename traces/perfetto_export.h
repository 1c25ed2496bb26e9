// Export of a simulated timeline as Chrome-trace JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open.
//
// Layout: one process per device (pid = device, named "device d"), with two threads: tid 0
// "compute" holds one complete event per op, tid 1 "transfers" one per transfer sent by the
// device. An op is named as in the zero-bubble paper's figures, kind and microbatch ("F3",
// "B3", "W3", "BW3"), with category `bubblesim_op` and args {stage, chunk, microbatch, pass}
// (pass: F, B, W or BW) — which is what the Kineto importer reads back (kineto_trace.h), so
// export then import gives every op's start and end to the nanosecond. A transfer is named
// after the op whose output it carries, category `bubblesim_transfer`, args {src_device,
// dst_device, stage, microbatch, pass}, with a flow arrow from it to the op that consumes it
// (Chrome's flow events v2: "bind_id" with "flow_out" on the transfer, "flow_in" on the op).
// The counter "activation memory" of each device steps at each op's start to the running sum
// of the deltas of the ops started so far (CostModel::activation_delta, its unit).
// Times are written in microseconds with three decimals: exact nanoseconds.
#pragma once

#include <string>
#include <vector>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/output_file.h"
#include "sim/schedule.h"

namespace bubblesim::traces {

// Writes the trace of `timeline` (the result of running `schedule` with `costs`, whose
// transfers are `transfers`, from a sim::TransferLog) to `path` by the writer rule
// (sim/output_file.h): a failure never leaves a partial file. Throws Error when the file cannot be
// written.
void save_perfetto_trace(const std::string& path, const sim::Schedule& schedule,
                         const sim::Timeline& timeline,
                         const std::vector<sim::TransferEvent>& transfers,
                         const sim::CostModel& costs);
// The same into `out`'s temporary; the caller commits it.
void save_perfetto_trace(sim::OutputFile& out, const sim::Schedule& schedule,
                         const sim::Timeline& timeline,
                         const std::vector<sim::TransferEvent>& transfers,
                         const sim::CostModel& costs);

}  // namespace bubblesim::traces
