#include "analysis/least_squares.h"

#include <algorithm>
#include <cmath>

#include "sim/error.h"

namespace bubblesim::analysis {

namespace {

double sum_of_squares(const std::vector<double>& r) {
  double s = 0;
  for (const double x : r)
    s += x * x;
  return s;
}

// Solves a * x = b for a small symmetric positive definite a (Gaussian elimination with
// partial pivoting; n is a handful). Returns false when a is singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double>& b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (!(std::abs(a[pivot][c]) > 1e-300)) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k)
        a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = n; c-- > 0;) {
    for (std::size_t k = c + 1; k < n; ++k)
      b[c] -= a[c][k] * b[k];
    b[c] /= a[c][c];
  }
  return true;
}

}  // namespace

LeastSquaresResult fit_least_squares(const Residuals& residuals, std::vector<double> x0,
                                     const std::vector<double>& lower,
                                     const std::vector<double>& upper,
                                     const LeastSquaresOptions& options) {
  const std::size_t n = x0.size();
  BUBBLESIM_CHECK(n >= 1 && lower.size() == n && upper.size() == n, "bounds of another size");
  for (std::size_t j = 0; j < n; ++j)
    BUBBLESIM_CHECK(lower[j] <= x0[j] && x0[j] <= upper[j], "start outside the bounds");
  LeastSquaresResult result;
  result.x = std::move(x0);
  std::vector<double> r = residuals(result.x);
  ++result.evaluations;
  BUBBLESIM_CHECK(!r.empty(), "no residuals");
  result.cost = sum_of_squares(r);
  double lambda = 1e-3;
  for (; result.iterations < options.max_iterations; ++result.iterations) {
    // The Jacobian by forward differences, stepping inwards at an upper bound.
    std::vector<std::vector<double>> jac(n);
    for (std::size_t j = 0; j < n; ++j) {
      double h = std::max(options.absolute_step, options.relative_step * std::abs(result.x[j]));
      if (result.x[j] + h > upper[j]) h = -h;
      std::vector<double> x = result.x;
      x[j] += h;
      const std::vector<double> rj = residuals(x);
      ++result.evaluations;
      BUBBLESIM_CHECK(rj.size() == r.size(), "residuals changed length");
      jac[j].resize(r.size());
      for (std::size_t i = 0; i < r.size(); ++i)
        jac[j][i] = (rj[i] - r[i]) / h;
    }
    std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0));
    std::vector<double> gradient(n, 0);  // J^T r
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t i = 0; i < r.size(); ++i)
        gradient[a] += jac[a][i] * r[i];
      for (std::size_t b = 0; b < n; ++b) {
        for (std::size_t i = 0; i < r.size(); ++i)
          jtj[a][b] += jac[a][i] * jac[b][i];
      }
    }
    // Parameters at a bound that descent would push further out stay where they are.
    std::vector<bool> free(n, true);
    for (std::size_t j = 0; j < n; ++j) {
      if ((result.x[j] <= lower[j] && gradient[j] > 0) ||
          (result.x[j] >= upper[j] && gradient[j] < 0) || jtj[j][j] <= 0) {
        free[j] = false;
      }
    }
    bool accepted = false, converged = false;
    while (lambda < 1e12) {
      std::vector<std::vector<double>> a = jtj;
      std::vector<double> step(n);
      for (std::size_t j = 0; j < n; ++j) {
        step[j] = free[j] ? -gradient[j] : 0;
        a[j][j] = free[j] ? jtj[j][j] * (1 + lambda) : 1;
        for (std::size_t k = 0; k < n; ++k) {
          if (k != j && (!free[j] || !free[k])) a[j][k] = 0;
        }
      }
      if (!solve(a, step)) break;
      std::vector<double> x = result.x;
      bool moved = false;
      for (std::size_t j = 0; j < n; ++j) {
        const double next = std::clamp(x[j] + step[j], lower[j], upper[j]);
        moved = moved || next != x[j];
        x[j] = next;
      }
      if (!moved) {
        converged = true;
        break;
      }
      std::vector<double> rx = residuals(x);
      ++result.evaluations;
      const double cost = sum_of_squares(rx);
      if (cost < result.cost) {
        converged = result.cost - cost <= options.cost_tolerance * result.cost;
        result.x = std::move(x);
        r = std::move(rx);
        result.cost = cost;
        lambda = std::max(lambda / 3, 1e-9);
        accepted = true;
        break;
      }
      lambda *= 4;
    }
    if (!accepted || converged) break;
  }
  return result;
}

}  // namespace bubblesim::analysis
