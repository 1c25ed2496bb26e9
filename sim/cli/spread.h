// Work spread over the ranks of an MPI job (docs/sweeps.md, "How the work is spread").
//
// Items are numbered 0..n-1, and every rank has prepared the same inputs (each reads the study
// or the model itself), so a batch travels as item numbers and comes back as the results'
// bytes. Rank 0 hands out batches on request (dynamic: items differ in cost by orders of
// magnitude), sized to about a quarter of a second of the asking rank's measured rate and
// smaller near the end so that the ranks finish together; rank 0 also simulates batches on a
// thread of its own while it serves the others. Every message from a worker to rank 0 is a
// request answered at once, so no two ranks ever wait on each other's send.
#pragma once

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <tbb/task_arena.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cli/ranks.h"

namespace bubblesim::cli {

// Evaluates the items of a batch and returns their results as bytes (wire.h). May throw: on a
// worker the job then ends with rank 0 reporting the message.
using EvaluateBatch = std::function<std::string(const std::vector<std::size_t>& items)>;

// A worker heard nothing from rank 0 for the timeout it was given: rank 0 died or hangs (under
// srun the other tasks of a step may outlive it). The caller says so and ends the job
// (Ranks::abort).
class RankZeroLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Setup --------------------------------------------------------------------------------------

// A worker (rank > 0), once its preparation is over: reports to rank 0 that it is ready
// (`error` empty; `fingerprint` identifies its inputs, `threads` its cores) or why it failed,
// then waits. Returns -1 when rank 0 says go, else the exit status rank 0 asks it to end with.
// Throws RankZeroLost after `timeout_s` without an answer.
int report_ready(Ranks& ranks, const std::string& error, const std::string& fingerprint,
                 int threads, double timeout_s = 600);

// Rank 0, when it will not start the work (its own preparation failed, or --help): tells every
// worker to end with `status`. Give 0 even after a failure: mpirun ends the whole job when a
// rank exits with another status, maybe before rank 0 has printed why; the job's status is
// rank 0's.
void quit_workers(Ranks& ranks, int status);

// Rank 0, once its own preparation is over: waits (at most `timeout_s`) for every worker's
// report and says go. Returns the threads of each rank (index = rank; `own_threads` for rank 0).
// When a worker failed, read other inputs (another fingerprint) or did not report in time,
// tells every worker to end (status 0) and throws InvalidArgument "rank R on HOST: why".
std::vector<int> start_workers(Ranks& ranks, const std::string& fingerprint, int own_threads,
                               double timeout_s);

// Work ---------------------------------------------------------------------------------------

struct SpreadOptions {
  double rank_timeout_s = 600;  // a rank holding a batch this long without a word is lost
  double batch_seconds = 0.25;  // a batch is about this much work for the rank that asks
  std::vector<int> threads;     // of each rank (start_workers)
};

struct SpreadOutcome {
  std::size_t done = 0;  // items whose results were accepted
  int stop_signal = 0;   // SIGINT or SIGTERM when a signal stopped the hand-out early, else 0
};

// Rank 0: hands out `items` (indices) in order until all are done or StopSignals reports a
// signal; then waits for the batches under way and tells every worker to stop. `local`
// evaluates rank 0's own batches on another thread; `accept` receives every batch's results
// (on this thread); `tick` is called often with the count done so far (progress, periodic
// writes). Throws Error "rank R on HOST: ..." when a worker fails or holds a batch beyond the
// timeout: the workers are then left waiting and the caller, after saving what it has, ends
// the job with Ranks::abort.
SpreadOutcome coordinate(
    Ranks& ranks, const std::vector<std::size_t>& items, const EvaluateBatch& local,
    const std::function<void(const std::vector<std::size_t>& batch, const std::string& results)>&
        accept,
    const std::function<void(std::size_t done)>& tick, const SpreadOptions& options);

// A worker: asks rank 0 for batches and evaluates them with `evaluate` until told to stop.
// After a stop signal of its own it returns its batch's results and leaves. Returns 0, or 1
// after `evaluate` threw (rank 0 has been told why). Throws RankZeroLost when rank 0 does not
// answer a request within `timeout_s` (it answers at once while it runs).
int serve(Ranks& ranks, const EvaluateBatch& evaluate, double timeout_s = 600);

// A worker's whole run for a command (`who`, e.g. "bubblesim sweep"): prepares as rank 0 does
// (`prepare` returns the setup, nothing after --help, or throws), reports ready or why not,
// then serves the batches with `evaluate(setup, arena, items)`. Setup has `jobs` (threads, 0
// for all), `rank_timeout_s` and `fingerprint`. Prints nothing but the line saying rank 0 is
// lost (then ends the job).
template <class Setup, class Prepare, class Evaluate>
int run_worker(Ranks& ranks, std::ostream& err, const char* who, const Prepare& prepare,
               const Evaluate& evaluate) {
  std::optional<Setup> setup;
  std::string error;
  try {
    setup = prepare();
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "cannot prepare the work";
  }
  std::optional<tbb::task_arena> arena;
  if (setup) arena.emplace(setup->jobs == 0 ? int{tbb::task_arena::automatic} : setup->jobs);
  const double timeout_s = setup ? setup->rank_timeout_s : 600;
  try {
    const int status = report_ready(ranks, error, setup ? setup->fingerprint : "",
                                    arena ? arena->max_concurrency() : 1, timeout_s);
    if (status >= 0) return status;
    return serve(
        ranks,
        [&](const std::vector<std::size_t>& items) { return evaluate(*setup, *arena, items); },
        timeout_s);
  } catch (const RankZeroLost& e) {
    // Rank 0 is gone: nothing else will end this job.
    fmt::print(err, "{}: error: {}\n", who, e.what());
    err.flush();
    ranks.abort(1);
    return 1;
  }
}

}  // namespace bubblesim::cli
