#include "traces/nccl.h"

#include <array>
#include <cctype>
#include <string>

namespace bubblesim::traces {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Lower case without '_', so that "All_To_All", "alltoall" and "AllToAll" compare equal.
std::string folded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// Folded names in the order they are looked for: longer names that contain shorter ones
// ("reducescatter" contains "reduce") come first.
struct Pattern {
  std::string_view folded_name;
  Collective collective;
};
constexpr std::array<Pattern, 10> kPatterns{{
    {"alltoall", Collective::AllToAll},
    {"allreduce", Collective::AllReduce},
    {"allgather", Collective::AllGather},
    {"reducescatter", Collective::ReduceScatter},
    {"broadcast", Collective::Broadcast},
    {"sendrecv", Collective::SendRecv},
    {"send", Collective::SendRecv},
    {"recv", Collective::SendRecv},
    {"reduce", Collective::Reduce},
    {"bcast", Collective::Broadcast},
}};

Collective find_collective(const std::string& folded_text) {
  for (const Pattern& p : kPatterns) {
    if (folded_text.find(p.folded_name) != std::string::npos) return p.collective;
  }
  return Collective::Unknown;
}

}  // namespace

std::string_view to_string(Collective collective) {
  static constexpr std::array<std::string_view, kNumCollectives> kNames{
      "unknown",   "all-reduce", "all-gather", "reduce-scatter",
      "broadcast", "reduce",     "send/recv",  "all-to-all"};
  return kNames[static_cast<std::size_t>(collective)];
}

bool is_nccl_kernel(std::string_view name) {
  if (!starts_with(name, "nccl")) return false;
  name = name.substr(0, name.find('('));
  if (starts_with(name, "ncclKernel_") || starts_with(name, "ncclDevKernel_") ||
      starts_with(name, "ncclSymDevKernel_")) {
    return true;
  }
  // NCCL <= 2.7: "nccl<Coll>...Kernel_...", the collective right after the prefix.
  const std::size_t kernel = name.find("Kernel_");
  return kernel != std::string_view::npos &&
         find_collective(folded(name.substr(4, kernel - 4))) != Collective::Unknown;
}

Collective collective_of_kernel(std::string_view name) {
  name = name.substr(0, name.find('('));
  return find_collective(folded(name.substr(4)));
}

Collective collective_of_text(std::string_view text) {
  if (starts_with(text, "nccl:")) text.remove_prefix(5);
  return find_collective(folded(text));
}

}  // namespace bubblesim::traces
