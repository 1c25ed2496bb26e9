// Shared by the libFuzzer targets that build their input from values (profile_values,
// results_values): numbers drawn from libFuzzer's FuzzedDataProvider the way file readers meet
// them.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <limits>

namespace bubblesim::fuzz {

// Mostly a small number (0 to 40) times `scale` (stages and microbatches a schedule has; times of
// a few microseconds with a scale of 1000), now and then a negative one or an edge of the type,
// where overflows live. On exhausted input: 0.
template <typename T>
T fuzzed_number(FuzzedDataProvider& in, T scale = 1) {
  const int pick = in.ConsumeIntegralInRange<int>(0, 15);
  if (pick <= 12) return static_cast<T>(in.ConsumeIntegralInRange<int>(0, 40) * scale);
  if (pick == 13) return static_cast<T>(-in.ConsumeIntegralInRange<int>(1, 40));
  if (pick == 14) return std::numeric_limits<T>::max();
  return in.ConsumeBool() ? std::numeric_limits<T>::lowest() : in.ConsumeIntegral<T>();
}

}  // namespace bubblesim::fuzz
