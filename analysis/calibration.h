// A calibration: the overheads `bubblesim calibrate` fitted to measured runs, as the file
// (CAL.yaml) that `--calibration` applies to simulate, compare, sweep and advise
// (docs/calibration.md). Times in the file are in ms.
#pragma once

#include <string>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/error.h"

namespace bubblesim::analysis {

// A calibration file that cannot be read or is malformed: "FILE:LINE: key 'KEY': what".
class CalibrationError : public Error {
 public:
  using Error::Error;
};

struct Calibration {
  sim::OpOverheads overheads;
  sim::P2pMode p2p = sim::P2pMode::Async;
  double efficiency = 0;  // fitted for runs timed from the model's FLOPs, in (0, 1]; 0: not fitted
  // How well it fits, as relative errors (0.01 = 1%): informative, not applied.
  std::string runs;  // the RUNS.yaml it was fitted to (written as UTF-8: other bytes as U+FFFD)
  int num_runs = 0;
  double mape = 0;      // mean absolute percentage error of the fit, as a fraction
  double worst = 0;     // the largest absolute relative error
  double loo_mape = 0;  // leave-one-out: each run predicted by a fit to the others
};

// Reads `path`; throws CalibrationError naming the file, line and key. Unknown keys are errors.
Calibration load_calibration(const std::string& path);

// The file's text (YAML with a comment header), and writing it atomically (temporary file, then
// rename; throws Error when it cannot be written).
std::string calibration_yaml(const Calibration& calibration);
void write_calibration(const std::string& path, const Calibration& calibration);

}  // namespace bubblesim::analysis
