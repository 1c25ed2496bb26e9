#include "sim/error.h"

#include <sstream>

namespace bubblesim {

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
