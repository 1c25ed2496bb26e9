// Schedule generators and the registry that names them.
//
// One extension point, one interface: a generator is a small class behind ScheduleGenerator.
// The registry is an ordinary object that its owner (the command line's main, a test) fills
// explicitly; there is no self-registration and no global registry.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/error.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

class CostModel;

struct ScheduleParams {
  int pp = 1;            // pipeline devices, p
  int microbatches = 1;  // m
  int chunks = 1;        // model chunks per device, v
  // For schedules built from the costs (zb-v): the costs they will run with, borrowed; unit
  // costs (T_F = T_B = T_W, T_comm = 0, M_B = 1, M_W = 0.5 per whole stage) when null.
  const CostModel* costs = nullptr;
  // Activation-memory limit per device for such schedules, in the unit of M_B; 0 means the
  // schedule's default.
  double mem_limit = 0;
  // Whether the generators that search (zb-1p, zb-2p, zb-auto, zb-v, v-half, v-min) finish
  // with the schedule improver (sim/schedules/improve.h) within its default budget; false
  // shows the raw generator.
  bool improve = true;
};

class ScheduleGenerator {
 public:
  virtual ~ScheduleGenerator() = default;
  virtual std::string_view name() const = 0;         // e.g. "zb-h1"
  virtual std::string_view description() const = 0;  // one line
  virtual std::string_view parameters() const = 0;   // which parameters, and their ranges
  // Chunks per device: the default, and whether -v/--chunks may change it.
  virtual int default_chunks() const { return 1; }
  virtual bool takes_chunks_option() const { return false; }
  // Whether ScheduleParams::mem_limit (--mem-limit) changes what it builds.
  virtual bool takes_mem_limit() const { return false; }
  // Throws InvalidArgument naming the parameter when `params` are out of range.
  virtual Schedule generate(const ScheduleParams& params) const = 0;
  // The exact mode (sim/exact/zb_ilp.h): the per-device activation-memory limits under which
  // it may improve what generate(params) built (params.costs set); empty when this generator
  // has no exact mode.
  virtual std::vector<double> exact_limits(const ScheduleParams& params) const {
    (void)params;
    return {};
  }
};

// A schedule name the registry does not know; the message lists the valid names.
class UnknownScheduleError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class ScheduleRegistry {
 public:
  // Precondition: no generator of the same name is registered yet.
  void add(std::unique_ptr<ScheduleGenerator> generator);
  const ScheduleGenerator& get(std::string_view name) const;   // throws UnknownScheduleError
  const ScheduleGenerator* find(std::string_view name) const;  // nullptr when unknown
  // In registration order.
  std::vector<const ScheduleGenerator*> all() const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<ScheduleGenerator>> generators_;
};

// Parameter checks shared by generators; each throws InvalidArgument naming the parameter.
void require_pipeline(const ScheduleParams& params);  // p >= 1, m >= 1, p * m within limits
void require_chunks(const ScheduleParams& params, std::string_view schedule, int chunks);

}  // namespace bubblesim::sim
