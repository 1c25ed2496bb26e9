// Ops: the unit of work a pipeline schedule orders, and simulation time.
//
// A *stage* is one slice of the model; a device holds one or more stages (its chunks).
// For one microbatch each stage runs F (forward) and then either BW (the fused backward that
// GPipe and 1F1B run) or B (gradient with respect to the input) followed by W (gradient with
// respect to the weights), as in the zero-bubble paper.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bubblesim::sim {

// Simulation time: an integer count of nanoseconds, so runs are exact and deterministic.
using TimeNs = std::int64_t;

// Converts a time in milliseconds (the unit of every user-facing input) to nanoseconds,
// rounding to the nearest nanosecond. Precondition: 0 <= ms <= 1e9.
TimeNs ms_to_ns(double ms);
// The longest time of one op or transfer: 1e9 ms (11.6 days), in ns.
inline constexpr TimeNs kMaxDurationNs = 1'000'000'000'000'000;
[[noreturn]] void throw_time_overflow();
// ms_to_ns for a time derived from user input (a model's FLOPs, a speed factor): outside
// [0, 1e9] ms (or not finite) throws InvalidArgument "WHAT: ... out of range" instead of
// failing an internal check.
TimeNs derived_ms_to_ns(double ms, const std::string& what);
// t + d for simulated times; throws Error when the sum leaves int64's range (a run of very
// many very long ops), instead of wrapping.
inline TimeNs add_time(TimeNs t, TimeNs d) {
  TimeNs sum = 0;
  if (__builtin_add_overflow(t, d, &sum)) [[unlikely]]
    throw_time_overflow();
  return sum;
}
double ns_to_ms(TimeNs ns);

enum class OpKind : std::uint8_t { F, B, W, BW };

inline constexpr int kNumOpKinds = 4;

// "F", "B", "W" or "BW".
std::string_view to_string(OpKind kind);

struct Op {
  OpKind kind = OpKind::F;
  std::int32_t stage = 0;       // 0-based pipeline stage (model slice)
  std::int32_t chunk = 0;       // index of `stage` among the stages of its device, by stage order
  std::int32_t microbatch = 0;  // 0-based

  friend bool operator==(const Op&, const Op&) = default;
};

// "F(stage 3, mb 5)"; the chunk is shown when it is not 0: "F(stage 11, chunk 1, mb 5)".
std::string to_string(const Op& op);

}  // namespace bubblesim::sim
