// Timing of a lowered schedule file with its actions where the file puts them (docs/replay.md).
//
// Each rank runs its row in order on one stream: a pass starts when the stream is free and its
// input is there (Engine's rules, sim/engine.h); a memory action (UNSHARD, RESHARD,
// REDUCE_GRAD) holds the stream for its duration; a SEND_F/SEND_B issues its transfer when the
// rank reaches it, and the matching RECV decides when the input is there:
// - P2pMode::Async: the transfer arrives CostModel::transfer_ns after its SEND was reached, and
//   neither SEND nor RECV holds a stream (they only order the transfer);
// - P2pMode::Blocking: the SEND holds the sender's stream for the transfer from when it is
//   reached, and the RECV holds the receiver's stream for it from max(the stream is free, the
//   SEND was reached); the input is there when the RECV ends.
// An input from another rank without a RECV in the file arrives transfer_ns after its producer
// ends (as Engine's async transfers). With no actions, no memory durations and async
// transfers, the timeline is Engine's (the tests check it); with the SENDs right after their
// passes and the RECVs right before theirs, as write_schedule_csv(CsvFormat::Comms) puts them,
// blocking is Engine's P2pMode::Blocking for schedules without overlapped pairs.
#pragma once

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "traces/schedule_csv.h"

namespace bubblesim::traces {

struct ActionDurations {
  sim::TimeNs unshard_ns = 0;
  sim::TimeNs reshard_ns = 0;
  sim::TimeNs reduce_grad_ns = 0;
};

// Throws ScheduleFileError naming where each rank waits when the file's order deadlocks.
sim::Timeline simulate_lowered(const ScheduleFile& file, const sim::CostModel& costs,
                               sim::P2pMode p2p, const ActionDurations& durations = {});

}  // namespace bubblesim::traces
