// Schedule files in the CSV format of PyTorch's torch.distributed.pipelining (compute-only):
// one row per rank, one action per cell in execution order, an empty cell an idle step.
// Actions are "<stage><kind><microbatch>" with kind F (forward), I (input gradient, our B),
// W (weight gradient) or B (full backward, our BW), e.g. "0F3", "2I1", "1W0", "3B2"; an
// overlapped pair (Schedule::overlapped_pairs) is one cell "(<F action>;<I or B action>)
// OVERLAP_F_B" without the space, e.g. "(0F7;7B3)OVERLAP_F_B".
// The placement is read from the file (each stage on the rank whose row runs it: looped, V or
// any other), the number of microbatches from the microbatch numbers. Routes
// (Schedule::routes): a microbatch runs every stage, except that when every microbatch's
// actions name exactly one half of the S stages, 0..S/2-1 or S/2..S-1, those halves are the
// routes (the two directions of DualPipe).
#pragma once

#include <iosfwd>
#include <string>

#include "sim/error.h"
#include "sim/output_file.h"
#include "sim/schedule.h"

namespace bubblesim::traces {

// A schedule file that is not a valid schedule. what() names the file and the cell
// ("FILE: row 2, column 5: ...") or, for a deadlock, the cells of the ops on the cycle.
class ScheduleFileError : public Error {
 public:
  using Error::Error;
};

// Parses CSV text; `name` is used in error messages. The result passes Schedule::validate
// and has no dependency cycle. Throws ScheduleFileError.
sim::Schedule parse_schedule_csv(std::istream& in, const std::string& name);
sim::Schedule read_schedule_csv(const std::string& path);

// Writes `schedule` in the same format (no idle cells). parse(write(s)) == s. Throws Error for
// routes the format cannot express (other than all stages or halves, as above).
void write_schedule_csv(std::ostream& out, const sim::Schedule& schedule);
// Writes to `path` by the writer rule (sim/output_file.h), so that a failure never leaves a
// partial file. Throws Error when the schedule or the file cannot be written.
void save_schedule_csv(const std::string& path, const sim::Schedule& schedule);
// Writes into `file`'s temporary; the caller commits it.
void save_schedule_csv(sim::OutputFile& file, const sim::Schedule& schedule);

}  // namespace bubblesim::traces
