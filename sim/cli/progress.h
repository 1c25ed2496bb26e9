// Progress of a long command (sweep, advise) on standard error.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace bubblesim::cli {

// Shows "DONE/TOTAL WHAT, RATE/s, ETA left": a bar redrawn in place on a terminal, else a line
// every 5 s, or nothing. Nothing is shown before `delay_s` seconds have passed (so a quick
// command stays quiet), and the final update only if something was shown before or the delay
// has passed.
class Progress {
 public:
  enum class Mode { kBar, kLines, kNone };

  // `who` prefixes lines ("bubblesim sweep"); `what` names the items ("configurations");
  // `done_before` items were done by an earlier run (they count as done but not in the rate).
  Progress(std::ostream& err, Mode mode, std::string who, std::string what, std::size_t total,
           std::size_t done_before, double delay_s = 0);

  // `done_now` items are done since the start; `last` when the work is over.
  void update(std::size_t done_now, bool last = false);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  Mode mode_;
  std::string who_, what_;
  std::size_t total_;
  std::size_t before_;
  double delay_s_;
  bool shown_any_ = false;
  Clock::time_point start_;
  Clock::time_point shown_;  // when the progress was last shown
};

// --progress: "bar", "lines", "none", or "auto" (a bar when `err` is standard error on a
// terminal, else lines); throws InvalidArgument naming the option otherwise.
Progress::Mode progress_mode(const std::string& text, const std::ostream& err);

}  // namespace bubblesim::cli
