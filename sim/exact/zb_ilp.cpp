#include "sim/exact/zb_ilp.h"

#include <algorithm>
#include <chrono>
#include <map>
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
  throw SettingError("exact",
                     "this build has no ILP solver (install coinor-libcbc-dev and rebuild)");
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

// The classes of passes: F, B and W of each stage. Class c = stage * 3 + kind index.
int class_of(int stage, int kind) {
  return stage * kKinds + kind;
}

// Builds and solves the program of zb_ilp.h for any placement of a line of stages.
class Program {
 public:
  Program(const Schedule& shape, const CostModel& costs, const std::vector<double>& limit)
      : stages_(shape.num_stages()),
        devices_(shape.num_devices()),
        m_(shape.num_microbatches),
        stage_device_(shape.stage_device),
        limit_(limit),
        model_(Cbc_newModel(), &Cbc_deleteModel) {
    const auto hop = [&](int from, int to) {
      const int a = device(from), b = device(to);
      return a == b ? 0.0 : ms(costs.transfer_ns(a, b));
    };
    for (int s = 0; s < stages_; ++s) {
      int chunk = 0;
      for (int e = 0; e < s; ++e)
        chunk += device(e) == device(s);
      chunk_.push_back(chunk);
      for (int k = 0; k < kKinds; ++k) {
        const Op op{kKindOf[k], s, chunk, 0};
        duration_.push_back(ms(costs.duration_ns(op, device(s))));
        delta_.push_back(costs.activation_delta(op, device(s)));
      }
      to_next_.push_back(s + 1 < stages_ ? hop(s, s + 1) : 0);
      to_prev_.push_back(s > 0 ? hop(s, s - 1) : 0);
      earliest_f_.push_back(s == 0 ? 0 : earliest_f_.back() + dur(s - 1, 0) + to_next_[s - 1]);
    }
    // Each device's first pass is the F of its lowest stage, at once.
    first_stage_.assign(static_cast<std::size_t>(devices_), -1);
    for (int s = stages_ - 1; s >= 0; --s)
      first_stage_[static_cast<std::size_t>(device(s))] = s;
    // The order of a microbatch's passes that the dependencies imply: before_[a][b] when
    // class a precedes class b for the same microbatch (transitive closure of F(s) -> F(s+1),
    // F(last) -> B(last), B(s+1) -> B(s), B(s) -> W(s)).
    const int classes = stages_ * kKinds;
    before_.assign(static_cast<std::size_t>(classes),
                   std::vector<bool>(static_cast<std::size_t>(classes)));
    std::vector<int> chain;  // F(0..S-1), B(S-1..0): a total order
    for (int s = 0; s < stages_; ++s)
      chain.push_back(class_of(s, 0));
    for (int s = stages_ - 1; s >= 0; --s)
      chain.push_back(class_of(s, 1));
    for (std::size_t x = 0; x < chain.size(); ++x) {
      for (std::size_t y = x + 1; y < chain.size(); ++y)
        set_before(chain[x], chain[y]);
    }
    for (int s = 0; s < stages_; ++s) {  // W(s) after B(s) and all before it
      for (int a = 0; a < classes; ++a) {
        if (a == class_of(s, 1) || is_before(a, class_of(s, 1))) set_before(a, class_of(s, 2));
      }
    }
  }

  // `bound_ms`: the warm start's span, an upper bound on the objective.
  void build(double bound_ms) {
    Cbc_setLogLevel(model_.get(), 0);
    const double longest = *std::max_element(duration_.begin(), duration_.end());
    const double big_m = bound_ms + longest;
    // Start times: every pass of device d lies within [lo(d), lo(d) + bound], lo(d) the
    // earliest start of its first pass.
    for (int c = 0; c < stages_ * kKinds; ++c) {
      const int s = c / kKinds;
      for (int j = 0; j < m_; ++j) {
        const double lo = device_start(device(s));
        const bool pinned = c == class_of(first_stage(device(s)), 0) && j == 0;
        lp_.add_col(lo, pinned ? lo : lo + bound_ms, 0, false);
      }
    }
    span_col_ = lp_.add_col(0, bound_ms, 1, false);

    for (int s = 0; s < stages_; ++s) {
      for (int j = 0; j < m_; ++j) {
        // Dependencies.
        if (s > 0) precedes(col(s - 1, 0, j), col(s, 0, j), dur(s - 1, 0) + to_next_[s - 1]);
        if (s + 1 < stages_) {
          precedes(col(s + 1, 1, j), col(s, 1, j), dur(s + 1, 1) + to_prev_[s + 1]);
        } else {
          precedes(col(s, 0, j), col(s, 1, j), dur(s, 0));
        }
        precedes(col(s, 1, j), col(s, 2, j), dur(s, 1));
        // Each class in microbatch order.
        if (j > 0) {
          for (int k = 0; k < kKinds; ++k)
            precedes(col(s, k, j - 1), col(s, k, j), dur(s, k));
        }
      }
      // The objective: the span of s's device >= the end of s's last W - the device's start.
      const int cols[2] = {span_col_, col(s, 2, m_ - 1)};
      const double coefs[2] = {1, -1};
      lp_.add_row(2, cols, coefs, 'G', dur(s, 2) - device_start(device(s)));
    }
    for (int d = 0; d < devices_; ++d) {
      // No less than the device's work (a valid cut that the big-M relaxation does not see).
      double work = 0;
      for (int s = 0; s < stages_; ++s) {
        if (device(s) == d) work += m_ * (dur(s, 0) + dur(s, 1) + dur(s, 2));
      }
      const double one = 1;
      lp_.add_row(1, &span_col_, &one, 'G', work);
      add_pairs(d, big_m);
    }
    for (int d = 0; d < devices_; ++d)
      add_memory_rows(d);
    lp_.load(model_.get());
  }

  // Warm start from a schedule: its order sets the binaries; CBC finds the start times.
  void warm_start(const Schedule& schedule) {
    std::vector<std::size_t> position(static_cast<std::size_t>(stages_ * kKinds * m_));
    for (const auto& ops : schedule.device_ops) {
      for (std::size_t n = 0; n < ops.size(); ++n) {
        position[static_cast<std::size_t>(
            col(ops[n].stage, kind_index(ops[n].kind), ops[n].microbatch))] = n;
      }
    }
    std::vector<int> index;
    std::vector<double> values;
    for (const Pair& pair : pairs_) {
      index.push_back(pair.col);
      values.push_back(position[static_cast<std::size_t>(pair.first)] <
                       position[static_cast<std::size_t>(pair.second)]);
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
  // binaries' order, through class and microbatch, which the solution respects).
  std::optional<Schedule> best_order() {
    const double* x = Cbc_bestSolution(model_.get());
    if (x == nullptr) return std::nullopt;
    Schedule out;
    out.num_microbatches = m_;
    out.stage_device = stage_device_;
    out.device_ops.resize(static_cast<std::size_t>(devices_));
    for (int s = 0; s < stages_; ++s) {
      auto& ops = out.device_ops[static_cast<std::size_t>(device(s))];
      for (int k = 0; k < kKinds; ++k) {
        for (int j = 0; j < m_; ++j)
          ops.push_back(Op{kKindOf[k], s, chunk_[static_cast<std::size_t>(s)], j});
      }
    }
    for (auto& ops : out.device_ops) {
      std::stable_sort(ops.begin(), ops.end(), [&](const Op& a, const Op& b) {
        return x[col(a.stage, kind_index(a.kind), a.microbatch)] <
               x[col(b.stage, kind_index(b.kind), b.microbatch)] - 1e-7;
      });
    }
    return out;
  }

 private:
  // Two passes of one device whose order the dependencies leave open: binary `col` is 1 when
  // `first` runs before `second` (both are columns: class * m + microbatch).
  struct Pair {
    int first, second;
    int col;
  };

  int device(int stage) const { return stage_device_[static_cast<std::size_t>(stage)]; }
  int first_stage(int d) const { return first_stage_[static_cast<std::size_t>(d)]; }
  double device_start(int d) const { return earliest_f_[static_cast<std::size_t>(first_stage(d))]; }
  double dur(int stage, int kind) const {
    return duration_[static_cast<std::size_t>(class_of(stage, kind))];
  }
  int col(int stage, int kind, int mb) const { return class_of(stage, kind) * m_ + mb; }
  bool is_before(int a, int b) const {
    return before_[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
  }
  void set_before(int a, int b) {
    before_[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = true;
  }

  // start(after) >= start(before) + gap
  void precedes(int before, int after, double gap) {
    const int cols[2] = {after, before};
    const double coefs[2] = {1, -1};
    lp_.add_row(2, cols, coefs, 'G', gap);
  }

  // The classes of device d.
  std::vector<int> classes_of(int d) const {
    std::vector<int> out;
    for (int s = 0; s < stages_; ++s) {
      if (device(s) != d) continue;
      for (int k = 0; k < kKinds; ++k)
        out.push_back(class_of(s, k));
    }
    return out;
  }

  // Classes a != b of device d: where a precedes b for the same microbatch, pass a of
  // microbatch j and pass b of microbatch j' < j are unordered (for j <= j' the dependencies
  // and each class's microbatch order put a first); where neither precedes the other, every
  // pair of microbatches is.
  void add_pairs(int d, double big_m) {
    const std::vector<int> classes = classes_of(d);
    for (const int a : classes) {
      for (const int b : classes) {
        if (a == b || is_before(b, a)) continue;
        const bool ordered = is_before(a, b);
        if (!ordered && b < a) continue;  // unrelated classes: once, from the lower
        for (int j = 0; j < m_; ++j) {
          for (int jb = 0; jb < m_; ++jb) {
            if (ordered && jb >= j) continue;
            const int o = lp_.add_col(0, 1, 0, true);
            const int ca = a * m_ + j, cb = b * m_ + jb;
            pairs_.push_back(Pair{ca, cb, o});
            const double ta = duration_[static_cast<std::size_t>(a)];
            const double tb = duration_[static_cast<std::size_t>(b)];
            // o = 1: start(b) >= start(a) + T_a;  o = 0: start(a) >= start(b) + T_b.
            const int cols[3] = {cb, ca, o};
            const double first[3] = {1, -1, -big_m};
            lp_.add_row(3, cols, first, 'G', ta - big_m);
            const double second[3] = {-1, 1, big_m};
            lp_.add_row(3, cols, second, 'G', tb);
          }
        }
      }
    }
  }

  // After each pass of device d that allocates, the deltas of everything before it fit the
  // limit.
  void add_memory_rows(int d) {
    const std::vector<int> classes = classes_of(d);
    const auto delta = [&](int c) { return delta_[static_cast<std::size_t>(c)]; };
    // For each pass x: the pairs that decide what runs before it.
    std::map<int, std::vector<std::pair<int, double> > > open;
    std::map<int, double> fixed;
    for (const Pair& pair : pairs_) {
      const int a = pair.first / m_, b = pair.second / m_;
      if (device(a / kKinds) != d) continue;
      // Before `second` when o = 1: + delta(a) * o.
      open[pair.second].push_back({pair.col, delta(a)});
      // Before `first` when o = 0: + delta(b) * (1 - o).
      fixed[pair.first] += delta(b);
      open[pair.first].push_back({pair.col, -delta(b)});
    }
    for (const int k : classes) {
      if (delta(k) <= 0) continue;
      for (int j = 0; j < m_; ++j) {
        // Surely before pass (k, j): the class's earlier microbatches, and the classes that
        // precede k for microbatches up to j. The pairs decide the rest.
        double sure = delta(k) * j;
        for (const int a : classes) {
          if (is_before(a, k)) sure += delta(a) * (j + 1);
        }
        const int x = k * m_ + j;
        std::vector<int> cols;
        std::vector<double> coefs;
        for (const auto& [c, coef] : open[x]) {
          cols.push_back(c);
          coefs.push_back(coef);
        }
        lp_.add_row(static_cast<int>(cols.size()), cols.data(), coefs.data(), 'L',
                    limit_[static_cast<std::size_t>(d)] + 1e-9 - sure - fixed[x] - delta(k));
      }
    }
  }

  int stages_, devices_, m_;
  std::vector<int> stage_device_;
  const std::vector<double>& limit_;
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model_;
  LinearProgram lp_;
  std::vector<int> chunk_;                              // per stage: its chunk on its device
  std::vector<double> duration_;                        // per class, ms
  std::vector<double> delta_;                           // per class: activation memory
  std::vector<double> to_next_, to_prev_, earliest_f_;  // per stage, ms
  std::vector<int> first_stage_;                        // per device: its lowest stage
  std::vector<std::vector<bool> > before_;
  int span_col_ = 0;
  std::vector<Pair> pairs_;
};

}  // namespace

ExactResult solve_zero_bubble_ilp(const Schedule& warm_start, const CostModel& costs,
                                  const std::vector<double>& limit, const ExactOptions& options) {
  const int p = warm_start.num_devices(), m = warm_start.num_microbatches;
  if (p * m > kMaxStagesTimesMicrobatches) {
    throw SettingError("exact", "p*m = " + std::to_string(p * m) + " is above the " +
                                    std::to_string(kMaxStagesTimesMicrobatches) +
                                    " the exact mode takes; leave it out for the heuristic alone");
  }
  ExactResult result;
  result.schedule = warm_start;
  result.span_ns = result.warm_start_span_ns =
      simulate(warm_start, costs).metrics.max_device_span_ns;

  Program program(warm_start, costs, limit);
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
