// GCC 12 warns about std::regex's own code at -O1 (a false positive, GCC bug 105562).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "traces/kineto_trace.h"

#include <regex>

#include "traces/kineto_attribution.h"
#include "traces/kineto_handler.h"

namespace bubblesim::traces {

Profile import_kineto_traces(const std::vector<std::string>& paths, const RangeLabeller& labeller,
                             const std::string& iteration_pattern) {
  std::regex iteration;
  try {
    iteration = std::regex(iteration_pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw SettingError("iteration-regex", "'" + iteration_pattern +
                                              "' is not a valid regular expression: " + e.what());
  }
  Profile profile;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    TraceRecords records;
    read_trace(paths[i], labeller, iteration, records);
    add_trace(records, static_cast<std::int32_t>(i), profile);
  }
  // Sums of many long events: what the simulator and the profile file take (1e15 ns each).
  for (const PassSample& s : profile.passes) {
    sim::TimeNs span_ns = 0;
    if (s.kernel_ns > kMaxDurationNs ||
        __builtin_sub_overflow(s.gpu_end_ns, s.gpu_start_ns, &span_ns) ||
        span_ns > kMaxDurationNs) {
      throw TraceFormatError(paths[static_cast<std::size_t>(s.trace)] +
                             ": a labelled range holds more than 1e15 ns of GPU time");
    }
  }
  if (profile.total_kernel_ns > kMaxDurationNs) {
    throw TraceFormatError(paths.front() + ": the traces hold more than 1e15 ns of kernel time");
  }
  return profile;
}

}  // namespace bubblesim::traces
