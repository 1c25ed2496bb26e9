// The SAX handler of the Kineto importer: reads one trace file (plain or gzip JSON) into its
// records, each event checked as it comes. Internal to traces/.
#pragma once

#include <regex>
#include <string>

#include "traces/kineto_records.h"

namespace bubblesim::traces {

// Reads the trace at `path` into `records`, labelling its ranges with `labeller` and taking the
// ranges whose name matches `iteration` as iteration starts. Throws TraceFormatError naming the
// file and the byte where it went wrong.
void read_trace(const std::string& path, const RangeLabeller& labeller, const std::regex& iteration,
                TraceRecords& records);

}  // namespace bubblesim::traces
