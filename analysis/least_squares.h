// Bounded nonlinear least squares for small problems (a handful of parameters): the fitting
// engine of `bubblesim calibrate`.
#pragma once

#include <functional>
#include <vector>

namespace bubblesim::analysis {

struct LeastSquaresOptions {
  int max_iterations = 60;
  // Forward-difference step of parameter j: max(absolute_step, relative_step * |x_j|).
  double absolute_step = 1e-3;
  double relative_step = 1e-3;
  // Stops when an accepted step lowers the cost by less than this share of it.
  double cost_tolerance = 1e-10;
};

struct LeastSquaresResult {
  std::vector<double> x;  // the parameters found, within the bounds
  double cost = 0;        // sum of the squared residuals at x
  int iterations = 0;
  int evaluations = 0;  // calls of the residual function
};

// Residuals r(x) of a fixed length (>= 1) for parameters x.
using Residuals = std::function<std::vector<double>(const std::vector<double>&)>;

// Minimises sum r_i(x)^2 over lower <= x <= upper by Levenberg-Marquardt: a forward-difference
// Jacobian, the damped normal equations (J^T J + lambda diag(J^T J)) dx = -J^T r, the step
// projected onto the bounds, and parameters at a bound that the gradient pushes out of it held
// there for the step. Deterministic. Preconditions (checked): x0, lower, upper of one size >= 1,
// lower <= x0 <= upper.
LeastSquaresResult fit_least_squares(const Residuals& residuals, std::vector<double> x0,
                                     const std::vector<double>& lower,
                                     const std::vector<double>& upper,
                                     const LeastSquaresOptions& options = {});

}  // namespace bubblesim::analysis
