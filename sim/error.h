// Error types shared by every bubblesim library.
//
// Contract: bad input (options, files, schedules) is reported by throwing a subclass of
// bubblesim::Error whose what() is one line naming the option, file, line or op at fault and
// what was expected. Libraries never print or exit; the command line turns an Error into one
// line on standard error and exit status 2. A broken internal invariant is a bug, reported
// with BUBBLESIM_CHECK as bubblesim::InternalError (not an Error: it is never the user's fault).
#pragma once

#include <stdexcept>
#include <string>

namespace bubblesim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A parameter or option value outside its valid range.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Bad input for one setting of a run: `setting` is its name (the study key, which is also the
// long option of `bubblesim simulate`: "pp", "dp", "mem-limit"), `problem` what is wrong with
// it. what() is "setting 'pp': problem"; the command line words it "option --pp: problem", a
// study row or a runs file keeps what(). Libraries name settings this way, never options.
class SettingError : public InvalidArgument {
 public:
  SettingError(std::string setting, std::string problem);
  const std::string& setting() const { return setting_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string setting_;
  std::string problem_;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A number as error messages show it: the shortest form that reads back ("8", "1.5", "inf").
std::string format_number(double x);

[[noreturn]] void throw_internal_error(const char* condition, const char* file, int line,
                                       const std::string& detail);

}  // namespace bubblesim

// Always-on invariant check (also in release builds).
#define BUBBLESIM_CHECK(cond, detail)                                                    \
  do {                                                                                   \
    if (!(cond)) ::bubblesim::throw_internal_error(#cond, __FILE__, __LINE__, (detail)); \
  } while (false)
