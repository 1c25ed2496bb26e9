// The built-in schedule generators, registered in one place for the command line, the
// application code (sweep, advise, calibrate, validate) and the tests alike.
//
// Adding a schedule: a generator in two new files, sim/schedules/NAME.h and NAME.cpp (a
// ScheduleGenerator, or several, and an add_NAME_schedules(ScheduleRegistry&) that registers
// them), plus one line in builtin_schedules(). The sources of sim/schedules/ are found by
// CMake, and help texts, `bubblesim schedules`, `compare -s all` and the errors that list the
// valid names all read the registry. docs/architecture.md has a worked example.
#pragma once

#include "sim/schedule_registry.h"

namespace bubblesim::sim {

// Every built-in generator, in the order `bubblesim schedules` lists them.
ScheduleRegistry builtin_schedules();

}  // namespace bubblesim::sim
