#include "sim/schedules/builtin.h"

#include "sim/schedules/dual_pipe.h"
#include "sim/schedules/handcrafted.h"
#include "sim/schedules/interleaved.h"
#include "sim/schedules/v_shape.h"
#include "sim/schedules/zb_auto.h"

namespace bubblesim::sim {

ScheduleRegistry builtin_schedules() {
  ScheduleRegistry registry;
  add_handcrafted_schedules(registry);
  add_zb_auto_schedules(registry);
  add_interleaved_schedules(registry);
  add_v_shape_schedules(registry);
  add_dual_pipe_schedules(registry);
  return registry;
}

}  // namespace bubblesim::sim
