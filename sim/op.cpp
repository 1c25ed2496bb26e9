#include "sim/op.h"

#include <cmath>

#include "sim/error.h"

namespace bubblesim::sim {

TimeNs ms_to_ns(double ms) {
  BUBBLESIM_CHECK(std::isfinite(ms) && ms >= 0 && ms <= 1e9, "time out of range");
  return static_cast<TimeNs>(std::llround(ms * 1e6));
}

TimeNs derived_ms_to_ns(double ms, const std::string& what) {
  if (!(std::isfinite(ms) && ms >= 0 && ms <= 1e9)) {
    throw InvalidArgument(what + ": a time of " + format_number(ms) +
                          " ms is out of range (expected 0 to 1e9 ms)");
  }
  return ms_to_ns(ms);
}

void throw_time_overflow() {
  throw Error("the simulated time exceeds 2^63 ns (292 years): the ops' times are too long");
}

double ns_to_ms(TimeNs ns) {
  return static_cast<double>(ns) / 1e6;
}

std::string_view to_string(OpKind kind) {
  switch (kind) {
    case OpKind::F:
      return "F";
    case OpKind::B:
      return "B";
    case OpKind::W:
      return "W";
    case OpKind::BW:
      return "BW";
  }
  return "?";
}

std::string to_string(const Op& op) {
  std::string s(to_string(op.kind));
  s += "(stage " + std::to_string(op.stage);
  if (op.chunk != 0) s += ", chunk " + std::to_string(op.chunk);
  s += ", mb " + std::to_string(op.microbatch) + ")";
  return s;
}

}  // namespace bubblesim::sim
