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
//
// Lowered schedules (what the runtime executes, and what torchtitan users dump) add, in each
// rank's program order: "<stage>SEND_F<mb>" (stage sends its forward output to stage + 1),
// "<stage>RECV_F<mb>" (receives its forward input from stage - 1), "<stage>SEND_B<mb>" (sends its
// input gradient to stage - 1), "<stage>RECV_B<mb>" (receives its output gradient from
// stage + 1), and "<stage>UNSHARD", "<stage>RESHARD", "<stage>REDUCE_GRAD" (a microbatch number
// optional). Each RECV needs its SEND somewhere in the file and the other way round, on the
// row that runs its stage, a RECV before the pass that needs it and a SEND after the pass that
// makes it (else ScheduleFileError naming the cell). parse_schedule_csv keeps the passes (a
// lowered file reads as the same schedule as its compute-only form); parse_schedule_file also
// keeps the actions, which lowered_timing.h times where they are.
//
// Naming: PyTorch's current letters above (CsvNaming::Current), or the older ones
// (CsvNaming::Legacy): F, B (input gradient), W, BW (full backward). A file that fails in the
// current naming but reads in the older one gets a hint to say --csv-naming legacy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

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

enum class CsvNaming : std::uint8_t { Current, Legacy };

// An op as a cell names it in the current naming: "0F3", "2I1", "1W0", "3B2".
std::string action_token(const sim::Op& op);

// What a written file holds: the passes alone, or also a RECV before each pass whose input
// comes from another rank and a SEND after each pass whose output goes to another rank.
enum class CsvFormat : std::uint8_t { Compute, Comms };

// Parses CSV text; `name` is used in error messages. The result passes Schedule::validate
// and has no dependency cycle. Throws ScheduleFileError.
sim::Schedule parse_schedule_csv(std::istream& in, const std::string& name,
                                 CsvNaming naming = CsvNaming::Current);
sim::Schedule read_schedule_csv(const std::string& path, CsvNaming naming = CsvNaming::Current);

// A communication or memory action of a lowered file, in its row's program order.
struct FileAction {
  enum class Kind : std::uint8_t { SendF, RecvF, SendB, RecvB, Unshard, Reshard, ReduceGrad };
  Kind kind = Kind::SendF;
  int stage = 0;
  int microbatch = 0;             // 0 for a memory action that names none
  std::size_t passes_before = 0;  // passes of its row before it (an overlapped pair counts 2)
  int column = 0;                 // 1-based, as a spreadsheet shows it
};

// A schedule file with its actions: actions[row] (one list per row, possibly empty).
struct ScheduleFile {
  sim::Schedule schedule;
  std::vector<std::vector<FileAction>> actions;
  bool has_actions() const;
};
ScheduleFile parse_schedule_file(std::istream& in, const std::string& name,
                                 CsvNaming naming = CsvNaming::Current);
ScheduleFile read_schedule_file(const std::string& path, CsvNaming naming = CsvNaming::Current);

// Writes `schedule` in the same format (no idle cells), current naming. parse(write(s)) == s
// in both formats. Throws Error for routes the format cannot express (other than all stages or
// halves, as above).
void write_schedule_csv(std::ostream& out, const sim::Schedule& schedule,
                        CsvFormat format = CsvFormat::Compute);
// Writes to `path` by the writer rule (sim/output_file.h), so that a failure never leaves a
// partial file. Throws Error when the schedule or the file cannot be written.
void save_schedule_csv(const std::string& path, const sim::Schedule& schedule,
                       CsvFormat format = CsvFormat::Compute);
// Writes into `file`'s temporary; the caller commits it.
void save_schedule_csv(sim::OutputFile& file, const sim::Schedule& schedule,
                       CsvFormat format = CsvFormat::Compute);

}  // namespace bubblesim::traces
