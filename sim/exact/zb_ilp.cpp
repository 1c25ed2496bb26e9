#include "sim/exact/zb_ilp.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "sim/metrics.h"
#include "sim/simulation.h"

#ifdef BUBBLESIM_HAVE_CBC
#include <coin/Cbc_C_Interface.h>
#endif

namespace bubblesim::sim::exact {

double ExactResult::gap() const {
  if (proven_optimal || span_ns <= 0) return 0;
  return std::max(0.0, (static_cast<double>(span_ns) - bound_ns) / static_cast<double>(span_ns));
}

#ifndef BUBBLESIM_HAVE_CBC

bool available() {
  return false;
}

ExactResult solve_zero_bubble_ilp(const Schedule&, const CostModel&, const std::vector<double>&,
                                  const ExactOptions&) {
  throw InvalidArgument(
      "option --exact: this build has no ILP solver (install coinor-libcbc-dev and rebuild)");
}

#else

bool available() {
  return true;
}

namespace {

constexpr int kKinds = 3;  // F, B, W: the passes of a split backward
constexpr OpKind kKindOf[kKinds] = {OpKind::F, OpKind::B, OpKind::W};
int kind_index(OpKind kind) {
  return kind == OpKind::F ? 0 : kind == OpKind::B ? 1 : 2;
}

// The program's numbers are in milliseconds: spans of a few thousand, which keeps the big-M
// rows well conditioned.
double ms(TimeNs ns) {
  return static_cast<double>(ns) / 1e6;
}

// A mixed-integer program collected in memory and handed to CBC in one piece (adding rows to
// a CBC model one at a time copies its matrix each time).
class LinearProgram {
 public:
  int add_col(double lower, double upper, double objective, bool integer) {
    col_lower_.push_back(lower);
    col_upper_.push_back(upper);
    objective_.push_back(objective);
    integer_.push_back(integer);
    columns_.emplace_back();
    return static_cast<int>(columns_.size()) - 1;
  }
  // sense: 'G' (>= rhs), 'L' (<= rhs).
  void add_row(int n, const int* cols, const double* coefs, char sense, double rhs) {
    const int row = static_cast<int>(row_lower_.size());
    for (int k = 0; k < n; ++k)
      columns_[static_cast<std::size_t>(cols[k])].push_back({row, coefs[k]});
    row_lower_.push_back(sense == 'G' ? rhs : -kInfinity);
    row_upper_.push_back(sense == 'L' ? rhs : kInfinity);
  }
  void load(Cbc_Model* model) const {
    std::vector<CoinBigIndex> start = {0};
    std::vector<int> index;
    std::vector<double> value;
    for (const auto& column : columns_) {
      for (const auto& [row, coef] : column) {
        index.push_back(row);
        value.push_back(coef);
      }
      start.push_back(static_cast<CoinBigIndex>(index.size()));
    }
    Cbc_loadProblem(model, static_cast<int>(columns_.size()), static_cast<int>(row_lower_.size()),
                    start.data(), index.data(), value.data(), col_lower_.data(), col_upper_.data(),
                    objective_.data(), row_lower_.data(), row_upper_.data());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (integer_[c]) Cbc_setInteger(model, static_cast<int>(c));
      // Distinct names: CBC matches a warm start to columns by name.
      std::string name = "x";
      name += std::to_string(c);
      Cbc_setColName(model, static_cast<int>(c), name.c_str());
    }
  }

 private:
  static constexpr double kInfinity = 1e30;  // CBC's infinity
  std::vector<double> col_lower_, col_upper_, objective_;
  std::vector<bool> integer_;
  std::vector<std::vector<std::pair<int, double> > > columns_;
  std::vector<double> row_lower_, row_upper_;
};

// Builds and solves the program of zb_ilp.h.
class Program {
 public:
  Program(int p, int m, const CostModel& costs, const std::vector<double>& limit)
      : p_(p), m_(m), costs_(costs), limit_(limit), model_(Cbc_newModel(), &Cbc_deleteModel) {
    for (int s = 0; s < p; ++s) {
      for (int k = 0; k < kKinds; ++k)
        duration_[k].push_back(ms(costs.duration_ns(Op{kKindOf[k], s, 0, 0}, s)));
      to_next_.push_back(s + 1 < p ? ms(costs.transfer_ns(s, s + 1)) : 0);
      to_prev_.push_back(s > 0 ? ms(costs.transfer_ns(s, s - 1)) : 0);
      first_f_.push_back(s == 0 ? 0 : first_f_.back() + duration_[0][s - 1] + to_next_[s - 1]);
    }
  }

  // `bound_ms`: the warm start's span, an upper bound on the objective.
  void build(double bound_ms) {
    Cbc_setLogLevel(model_.get(), 0);
    double longest = 0;
    for (const auto& d : duration_)
      longest = std::max(longest, *std::max_element(d.begin(), d.end()));
    const double big_m = bound_ms + longest;
    // Start times: every pass of stage s lies within [first_f(s), first_f(s) + bound].
    for (int s = 0; s < p_; ++s) {
      for (int k = 0; k < kKinds; ++k) {
        for (int j = 0; j < m_; ++j) {
          const double lo = first_f_[static_cast<std::size_t>(s)];
          const bool pinned = k == 0 && j == 0;  // the stage's first pass starts at once
          lp_.add_col(lo, pinned ? lo : lo + bound_ms, 0, false);
        }
      }
    }
    span_col_ = lp_.add_col(0, bound_ms, 1, false);

    for (int s = 0; s < p_; ++s) {
      const auto i = static_cast<std::size_t>(s);
      for (int j = 0; j < m_; ++j) {
        // Dependencies.
        if (s > 0) precedes(col(0, s - 1, j), col(0, s, j), duration_[0][i - 1] + to_next_[i - 1]);
        if (s + 1 < p_) {
          precedes(col(1, s + 1, j), col(1, s, j), duration_[1][i + 1] + to_prev_[i + 1]);
        } else {
          precedes(col(0, s, j), col(1, s, j), duration_[0][i]);
        }
        precedes(col(1, s, j), col(2, s, j), duration_[1][i]);
        // Each kind in microbatch order.
        if (j > 0) {
          for (int k = 0; k < kKinds; ++k)
            precedes(col(k, s, j - 1), col(k, s, j), duration_[k][i]);
        }
      }
      // The objective: span of stage s = last W end - first F start; and no less than the
      // stage's work (a valid cut that the big-M relaxation does not see).
      const int cols[2] = {span_col_, col(2, s, m_ - 1)};
      const double coefs[2] = {1, -1};
      lp_.add_row(2, cols, coefs, 'G', duration_[2][i] - first_f_[i]);
      const double work = m_ * (duration_[0][i] + duration_[1][i] + duration_[2][i]);
      lp_.add_row(1, &span_col_, coefs, 'G', work);
      add_pairs(s, big_m);
    }
    for (int s = 0; s < p_; ++s)
      add_memory_rows(s);
    lp_.load(model_.get());
  }

  // Warm start from a schedule: its order sets the binaries; CBC finds the start times.
  void warm_start(const Schedule& schedule) {
    std::vector<std::vector<std::size_t> > position(static_cast<std::size_t>(p_));
    for (int d = 0; d < p_; ++d) {
      auto& pos = position[static_cast<std::size_t>(d)];
      pos.resize(static_cast<std::size_t>(kKinds * m_));
      const auto& ops = schedule.device_ops[static_cast<std::size_t>(d)];
      for (std::size_t n = 0; n < ops.size(); ++n)
        pos[static_cast<std::size_t>(kind_index(ops[n].kind) * m_ + ops[n].microbatch)] = n;
    }
    std::vector<int> index;
    std::vector<double> values;
    for (const Pair& pair : pairs_) {
      const auto& pos = position[static_cast<std::size_t>(pair.stage)];
      index.push_back(pair.col);
      values.push_back(pos[static_cast<std::size_t>(pair.first)] <
                       pos[static_cast<std::size_t>(pair.second)]);
    }
    Cbc_setMIPStartI(model_.get(), static_cast<int>(index.size()), index.data(), values.data());
  }

  void solve(double time_limit_s) {
    Cbc_setMaximumSeconds(model_.get(), time_limit_s);
    Cbc_setParameter(model_.get(), "threads", "1");
    // CBC 2.10.8 can crash in its preprocessing's post-processing when the time limit stops it.
    Cbc_setParameter(model_.get(), "preprocess", "off");
    Cbc_solve(model_.get());
  }

  bool proven_optimal() { return Cbc_isProvenOptimal(model_.get()) != 0; }
  double bound_ms() { return Cbc_getBestPossibleObjValue(model_.get()); }
  double objective_ms() { return Cbc_getObjValue(model_.get()); }

  // The order of the best solution: each device's passes sorted by start time (ties: the
  // binaries' order, through kind and microbatch, which the solution respects).
  std::optional<Schedule> best_order() {
    const double* x = Cbc_bestSolution(model_.get());
    if (x == nullptr) return std::nullopt;
    Schedule s;
    s.num_microbatches = m_;
    s.device_ops.resize(static_cast<std::size_t>(p_));
    for (int d = 0; d < p_; ++d) {
      s.stage_device.push_back(d);
      auto& ops = s.device_ops[static_cast<std::size_t>(d)];
      for (int k = 0; k < kKinds; ++k) {
        for (int j = 0; j < m_; ++j)
          ops.push_back(Op{kKindOf[k], d, 0, j});
      }
      std::stable_sort(ops.begin(), ops.end(), [&](const Op& a, const Op& b) {
        return x[col(kind_index(a.kind), d, a.microbatch)] <
               x[col(kind_index(b.kind), d, b.microbatch)] - 1e-7;
      });
    }
    return s;
  }

 private:
  // Two passes of one stage whose order the dependencies leave open: binary `col` is 1 when
  // `first` (the earlier kind, later microbatch) runs before `second`.
  struct Pair {
    int stage, first, second;  // first/second: kind * m + microbatch
    int col;
  };

  int col(int kind, int stage, int mb) const { return (stage * kKinds + kind) * m_ + mb; }

  // start(after) >= start(before) + gap
  void precedes(int before, int after, double gap) {
    const int cols[2] = {after, before};
    const double coefs[2] = {1, -1};
    lp_.add_row(2, cols, coefs, 'G', gap);
  }

  // Kinds a < b in F < B < W: pass a of microbatch j and pass b of microbatch j' < j are
  // unordered (for j <= j' the dependencies put a first).
  void add_pairs(int s, double big_m) {
    const auto i = static_cast<std::size_t>(s);
    for (int a = 0; a < kKinds; ++a) {
      for (int b = a + 1; b < kKinds; ++b) {
        for (int j = 1; j < m_; ++j) {
          for (int jb = 0; jb < j; ++jb) {
            const int o = lp_.add_col(0, 1, 0, true);
            pairs_.push_back(Pair{s, a * m_ + j, b * m_ + jb, o});
            const int sa = col(a, s, j), sb = col(b, s, jb);
            // o = 1: start(b) >= start(a) + T_a;  o = 0: start(a) >= start(b) + T_b.
            const int cols[3] = {sb, sa, o};
            const double first[3] = {1, -1, -big_m};
            lp_.add_row(3, cols, first, 'G', duration_[a][i] - big_m);
            const double second[3] = {-1, 1, big_m};
            lp_.add_row(3, cols, second, 'G', duration_[b][i]);
          }
        }
      }
    }
  }

  // After each pass that allocates, the deltas of everything before it fit the limit.
  void add_memory_rows(int s) {
    const auto i = static_cast<std::size_t>(s);
    double delta[kKinds];
    for (int k = 0; k < kKinds; ++k)
      delta[k] = costs_.activation_delta(Op{kKindOf[k], s, 0, 0}, s);
    // For each pass x: which passes are surely before it, and the pairs that decide the rest.
    std::vector<std::vector<std::pair<int, double> > > open(static_cast<std::size_t>(kKinds * m_));
    std::vector<double> fixed(static_cast<std::size_t>(kKinds * m_), 0);
    for (const Pair& pair : pairs_) {
      if (pair.stage != s) continue;
      const double d_first = delta[pair.first / m_], d_second = delta[pair.second / m_];
      // Before `second` when o = 1: + d_first * o.
      open[static_cast<std::size_t>(pair.second)].push_back({pair.col, d_first});
      // Before `first` when o = 0: + d_second * (1 - o).
      fixed[static_cast<std::size_t>(pair.first)] += d_second;
      open[static_cast<std::size_t>(pair.first)].push_back({pair.col, -d_second});
    }
    for (int k = 0; k < kKinds; ++k) {
      if (delta[k] <= 0) continue;
      for (int j = 0; j < m_; ++j) {
        // Surely before pass (k, j), by order and dependencies: the same kind's earlier
        // microbatches and the earlier kinds' microbatches up to j. The pairs decide the rest.
        double sure = delta[k] * j;
        for (int kb = 0; kb < k; ++kb)
          sure += delta[kb] * (j + 1);
        const auto x = static_cast<std::size_t>(k * m_ + j);
        std::vector<int> cols;
        std::vector<double> coefs;
        for (const auto& [c, coef] : open[x]) {
          cols.push_back(c);
          coefs.push_back(coef);
        }
        lp_.add_row(static_cast<int>(cols.size()), cols.data(), coefs.data(), 'L',
                    limit_[i] + 1e-9 - sure - fixed[x] - delta[k]);
      }
    }
  }

  int p_, m_;
  const CostModel& costs_;
  const std::vector<double>& limit_;
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model_;
  LinearProgram lp_;
  std::vector<double> duration_[kKinds];  // per stage, ms
  std::vector<double> to_next_, to_prev_, first_f_;
  int span_col_ = 0;
  std::vector<Pair> pairs_;
};

}  // namespace

ExactResult solve_zero_bubble_ilp(const Schedule& warm_start, const CostModel& costs,
                                  const std::vector<double>& limit, const ExactOptions& options) {
  const int p = warm_start.num_devices(), m = warm_start.num_microbatches;
  if (p * m > kMaxStagesTimesMicrobatches) {
    throw InvalidArgument("option --exact: p*m = " + std::to_string(p * m) + " is above the " +
                          std::to_string(kMaxStagesTimesMicrobatches) +
                          " the exact mode takes; leave out --exact for the heuristic alone");
  }
  ExactResult result;
  result.schedule = warm_start;
  result.span_ns = result.warm_start_span_ns =
      simulate(warm_start, costs).metrics.max_device_span_ns;

  Program program(p, m, costs, limit);
  program.build(ms(result.span_ns) + 1e-6);
  program.warm_start(warm_start);
  const auto t0 = std::chrono::steady_clock::now();
  program.solve(options.time_limit_s);
  result.solve_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.objective_ns = program.objective_ms() * 1e6;
  result.bound_ns = program.bound_ms() * 1e6;
  if (std::optional<Schedule> order = program.best_order()) {
    const std::vector<double> peaks = activation_peaks(*order, costs);
    bool fits = true;
    for (std::size_t d = 0; d < peaks.size(); ++d)
      fits = fits && peaks[d] <= limit[d] + 1e-9;
    if (fits) {
      const TimeNs span = simulate(*order, costs).metrics.max_device_span_ns;
      if (span < result.span_ns) {
        result.schedule = std::move(*order);
        result.span_ns = span;
      }
    }
  }
  // The solver works to a tolerance of well under a microsecond; the engine's integer
  // nanoseconds are the truth.
  result.proven_optimal = program.proven_optimal();
  if (result.proven_optimal) result.bound_ns = static_cast<double>(result.span_ns);
  result.bound_ns = std::min(result.bound_ns, static_cast<double>(result.span_ns));
  return result;
}

#endif

}  // namespace bubblesim::sim::exact
