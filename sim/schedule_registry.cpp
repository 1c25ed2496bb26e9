#include "sim/schedule_registry.h"

#include <cstdint>

namespace bubblesim::sim {

void ScheduleRegistry::add(std::unique_ptr<ScheduleGenerator> generator) {
  BUBBLESIM_CHECK(generator != nullptr, "null generator");
  BUBBLESIM_CHECK(find(generator->name()) == nullptr,
                  "schedule '" + std::string(generator->name()) + "' registered twice");
  generators_.push_back(std::move(generator));
}

const ScheduleGenerator* ScheduleRegistry::find(std::string_view name) const {
  for (const auto& g : generators_) {
    if (g->name() == name) return g.get();
  }
  return nullptr;
}

const ScheduleGenerator& ScheduleRegistry::get(std::string_view name) const {
  if (const ScheduleGenerator* g = find(name)) return *g;
  std::string valid;
  for (const std::string& n : names())
    valid += (valid.empty() ? "" : ", ") + n;
  throw UnknownScheduleError("unknown schedule '" + std::string(name) +
                             "'; valid values are: " + valid);
}

std::vector<const ScheduleGenerator*> ScheduleRegistry::all() const {
  std::vector<const ScheduleGenerator*> out;
  for (const auto& g : generators_)
    out.push_back(g.get());
  return out;
}

std::vector<std::string> ScheduleRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& g : generators_)
    out.emplace_back(g->name());
  return out;
}

void require_pipeline(const ScheduleParams& params) {
  // Bounds keep every per-op array index and the op count well inside 32-bit ranges.
  constexpr std::int64_t kMaxOps = std::int64_t{1} << 31;
  if (params.pp < 1 || params.pp > (1 << 20)) {
    throw SettingError("pp", "the pipeline devices must be between 1 and 1048576, got " +
                                 std::to_string(params.pp));
  }
  if (params.microbatches < 1 || params.microbatches > (1 << 24)) {
    throw SettingError("microbatches", "must be between 1 and 16777216, got " +
                                           std::to_string(params.microbatches));
  }
  if (params.chunks < 1 || params.chunks > 1024) {
    throw SettingError("chunks", "the model chunks per device must be between 1 and 1024, got " +
                                     std::to_string(params.chunks));
  }
  const std::int64_t ops = std::int64_t{3} * params.pp * params.chunks * params.microbatches;
  if (ops > kMaxOps) {
    throw InvalidArgument("p * v * m = " + std::to_string(ops / 3) +
                          " stage-microbatches is too large to simulate (at most " +
                          std::to_string(kMaxOps / 3) + ")");
  }
}

void require_chunks(const ScheduleParams& params, std::string_view schedule, int chunks) {
  if (params.chunks != chunks) {
    throw SettingError("chunks", "schedule '" + std::string(schedule) + "' places " +
                                     std::to_string(chunks) + (chunks == 1 ? " chunk" : " chunks") +
                                     " per device, got " + std::to_string(params.chunks));
  }
}

}  // namespace bubblesim::sim
