#include "sim/error.h"

namespace bubblesim {

void throw_internal_error(const char* condition, const char* file, int line,
                          const std::string& detail) {
  throw InternalError(std::string("internal error: ") + condition + " failed at " + file + ":" +
                      std::to_string(line) + (detail.empty() ? "" : ": " + detail));
}

}  // namespace bubblesim
