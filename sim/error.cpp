#include "sim/error.h"

#include <utility>

#include <sstream>

namespace bubblesim {

SettingError::SettingError(std::string setting, std::string problem)
    : InvalidArgument("setting '" + setting + "': " + problem),
      setting_(std::move(setting)),
      problem_(std::move(problem)) {}

std::string format_number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

void throw_internal_error(const char* condition, const char* file, int line,
                          const std::string& detail) {
  throw InternalError(std::string("internal error: ") + condition + " failed at " + file + ":" +
                      std::to_string(line) + (detail.empty() ? "" : ": " + detail));
}

}  // namespace bubblesim
