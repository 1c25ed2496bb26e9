// Schedule files in the CSV format of PyTorch's torch.distributed.pipelining (compute-only):
// one row per rank, one action per cell in execution order, an empty cell an idle step.
// Actions are "<stage><kind><microbatch>" with kind F (forward), I (input gradient, our B),
// W (weight gradient) or B (full backward, our BW), e.g. "0F3", "2I1", "1W0", "3B2".
// The placement is read from the file (each stage on the rank whose row runs it: looped, V or
// any other), the number of microbatches from the microbatch numbers.
#pragma once

#include <iosfwd>
#include <string>

#include "sim/error.h"
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

// Writes `schedule` in the same format (no idle cells). parse(write(s)) == s.
void write_schedule_csv(std::ostream& out, const sim::Schedule& schedule);
// Writes to `path` through a temporary file renamed into place, so that a failure never
// leaves a partial file. Throws Error when the file cannot be written.
void save_schedule_csv(const std::string& path, const sim::Schedule& schedule);

}  // namespace bubblesim::traces
