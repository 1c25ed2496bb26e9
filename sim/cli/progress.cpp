#include "sim/cli/progress.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>

#include <iostream>

#include "sim/error.h"

namespace bubblesim::cli {

namespace {

// Without a terminal, the progress line is repeated this often.
constexpr double kProgressLineSeconds = 5;

std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

Progress::Progress(std::ostream& err, Mode mode, std::string who, std::string what,
                   std::size_t total, std::size_t done_before, double delay_s)
    : err_(err),
      mode_(mode),
      who_(std::move(who)),
      what_(std::move(what)),
      total_(total),
      before_(done_before),
      delay_s_(delay_s),
      start_(Clock::now()),
      shown_(start_) {}

void Progress::update(std::size_t done_now, bool last) {
  if (mode_ == Mode::kNone) return;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < delay_s_ && !shown_any_) return;
  const double since = std::chrono::duration<double>(now - shown_).count();
  if (!last && shown_any_ && since < (mode_ == Mode::kBar ? 0.1 : kProgressLineSeconds)) return;
  if (!last && !shown_any_ && delay_s_ == 0 &&
      since < (mode_ == Mode::kBar ? 0.1 : kProgressLineSeconds)) {
    return;
  }
  shown_ = now;
  shown_any_ = true;
  const double rate = elapsed > 0 ? done_now / elapsed : 0;
  const std::size_t done = before_ + done_now;
  const std::size_t left = total_ - done;
  const std::string eta = rate > 0 ? duration_text(left / rate) : "?";
  const std::string text =
      fmt::format("{}/{} {}, {:.0f}/s, {} left", done, total_, what_, rate, eta);
  if (mode_ == Mode::kBar) {
    constexpr int kWidth = 30;
    const int filled = total_ == 0 ? kWidth : static_cast<int>(kWidth * done / total_);
    fmt::print(err_, "\r[{:#<{}}{:.<{}}] {}\033[K", "", filled, "", kWidth - filled, text);
    if (last) err_ << '\n';
  } else {
    fmt::print(err_, "{}: {}\n", who_, text);
  }
  err_.flush();
}

Progress::Mode progress_mode(const std::string& text, const std::ostream& err) {
  if (text == "bar") return Progress::Mode::kBar;
  if (text == "lines") return Progress::Mode::kLines;
  if (text == "none") return Progress::Mode::kNone;
  if (text != "auto") {
    throw InvalidArgument("option --progress: expected auto, bar, lines or none, got '" + text +
                          "'");
  }
  const bool terminal = &err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
  return terminal ? Progress::Mode::kBar : Progress::Mode::kLines;
}

}  // namespace bubblesim::cli
