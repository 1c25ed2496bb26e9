#include "sim/cli/spread.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/cli/stop_signals.h"
#include "sim/cli/wire.h"
#include "sim/error.h"

namespace bubblesim::cli {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

// Message tags. Worker -> rank 0: kReady, kFailed, kRequest, kError. Rank 0 -> worker: kGo,
// kQuit, kBatch, kStop.
enum Tag : int {
  kReady = 1,
  kFailed = 2,
  kQuit = 3,
  kGo = 4,
  kRequest = 5,
  kBatch = 6,
  kStop = 7,
  kError = 8,
};

// After a stop signal, how long rank 0 waits for the batches under way.
constexpr double kStopGraceSeconds = 10;

// How long a message of a few bytes may wait to be taken (it does not wait: MPI sends it
// eagerly).
constexpr Seconds kSmallMessage{60};

// The next message from rank 0 (a worker only ever hears from rank 0); RankZeroLost after
// `timeout_s` without one.
RankMessage from_rank0(Ranks& ranks, double timeout_s) {
  if (std::optional<RankMessage> m = ranks.receive(Seconds(timeout_s))) return std::move(*m);
  throw RankZeroLost(fmt::format(
      "rank {} on {}: rank 0 sent nothing for {} s: it died or hangs (see --rank-timeout)",
      ranks.rank(), ranks.host(), format_number(timeout_s)));
}

std::string who(int rank, const std::string& host) {
  return fmt::format("rank {} on {}", rank, host);
}

// A worker's message to rank 0; RankZeroLost when rank 0 does not take it in `timeout_s`.
void send_to_rank0(Ranks& ranks, int tag, const std::string& bytes, double timeout_s) {
  try {
    ranks.send(0, tag, bytes, Seconds(timeout_s));
  } catch (const Error& e) {
    throw RankZeroLost(who(ranks.rank(), ranks.host()) + ": " + e.what() +
                       " (it died or hangs; see --rank-timeout)");
  }
}

}  // namespace

int report_ready(Ranks& ranks, const std::string& error, const std::string& fingerprint,
                 int threads, double timeout_s) {
  WireWriter w;
  w.text(ranks.host());
  if (error.empty()) {
    w.text(fingerprint);
    w.number<std::int32_t>(threads);
  } else {
    w.text(error);
  }
  send_to_rank0(ranks, error.empty() ? kReady : kFailed, w.bytes(), timeout_s);
  const RankMessage m = from_rank0(ranks, timeout_s);
  if (m.tag == kGo) return -1;
  BUBBLESIM_CHECK(m.tag == kQuit, "unexpected message " + std::to_string(m.tag));
  WireReader r(m.bytes);
  return r.number<std::int32_t>();
}

void quit_workers(Ranks& ranks, int status) {
  WireWriter w;
  w.number<std::int32_t>(status);
  for (int rank = 1; rank < ranks.size(); ++rank)
    ranks.send(rank, kQuit, w.bytes(), kSmallMessage);
}

std::vector<int> start_workers(Ranks& ranks, const std::string& fingerprint, int own_threads,
                               double timeout_s) {
  std::vector<int> threads(static_cast<std::size_t>(ranks.size()), 0);
  threads[0] = own_threads;
  std::string failure;
  const auto until = Clock::now() + Seconds(timeout_s);
  for (int reported = 1; reported < ranks.size() && failure.empty();) {
    const std::optional<RankMessage> m =
        ranks.receive(std::max(Seconds(0), Seconds(until - Clock::now())));
    if (!m) {
      std::string silent;
      for (std::size_t rank = 1; rank < threads.size(); ++rank) {
        if (threads[rank] == 0) silent += (silent.empty() ? "" : ", ") + std::to_string(rank);
      }
      failure = fmt::format("rank(s) {} did not report ready within --rank-timeout {} s", silent,
                            format_number(timeout_s));
      break;
    }
    WireReader r(m->bytes);
    const std::string host = r.text();
    if (m->tag == kFailed) {
      failure = who(m->from, host) + ": " + r.text();
    } else if (m->tag == kReady) {
      if (r.text() != fingerprint) {
        failure = who(m->from, host) +
                  ": read other inputs than rank 0 (is the study the same file on every node?)";
      }
      threads[static_cast<std::size_t>(m->from)] = std::max(1, r.number<std::int32_t>());
      ++reported;
    } else {
      BUBBLESIM_CHECK(false, "unexpected message " + std::to_string(m->tag));
    }
  }
  if (!failure.empty()) {
    // Every worker waits for go or quit (a failed one too); reports still unread are dropped.
    // Workers end with 0 so that mpirun does not end the job before rank 0 has said why; the
    // job's status is rank 0's.
    quit_workers(ranks, 0);
    throw InvalidArgument(failure);
  }
  for (int rank = 1; rank < ranks.size(); ++rank)
    ranks.send(rank, kGo, "", kSmallMessage);
  return threads;
}

SpreadOutcome coordinate(
    Ranks& ranks, const std::vector<std::size_t>& items, const EvaluateBatch& local,
    const std::function<void(const std::vector<std::size_t>& batch, const std::string& results)>&
        accept,
    const std::function<void(std::size_t done)>& tick, const SpreadOptions& options) {
  struct Holder {
    std::vector<std::size_t> batch;  // under way (empty: none)
    Clock::time_point since;
    double items_per_s = 0;  // measured on its last batch
    int threads = 1;
    bool finished = false;  // told to stop, or left
    std::string host;
  };
  const auto n_ranks = static_cast<std::size_t>(ranks.size());
  std::vector<Holder> holders(n_ranks);
  for (std::size_t rank = 0; rank < n_ranks; ++rank) {
    holders[rank].threads = rank < options.threads.size() ? std::max(1, options.threads[rank]) : 1;
  }
  SpreadOutcome outcome;
  // Rank 0's own batches run on a thread of their own that takes its next batch itself, so that
  // its cores never wait for this thread; `mutex` guards `next` and what that thread hands back.
  std::mutex mutex;
  std::size_t next = 0;
  const auto take = [&](Holder& h) {  // with `mutex` held
    const std::size_t left = items.size() - next;
    if (left == 0) return;
    const auto threads = static_cast<std::size_t>(h.threads);
    std::size_t n = h.items_per_s > 0
                        ? static_cast<std::size_t>(h.items_per_s * options.batch_seconds)
                        : 4 * threads;
    // Near the end, smaller batches, so that no rank is left with a long one.
    n = std::min(n, std::max<std::size_t>(1, left / (2 * n_ranks)));
    n = std::clamp<std::size_t>(n, std::min(threads, left), std::min<std::size_t>(left, 1 << 20));
    h.batch.assign(items.begin() + static_cast<std::ptrdiff_t>(next),
                   items.begin() + static_cast<std::ptrdiff_t>(next + n));
    next += n;
    h.since = Clock::now();
  };
  const auto measure = [&](Holder& h) {
    const double s = Seconds(Clock::now() - h.since).count();
    if (s > 0) h.items_per_s = static_cast<double>(h.batch.size()) / s;
  };

  struct OwnResults {
    std::vector<std::size_t> batch;
    std::string results;
    std::exception_ptr error;
  };
  std::deque<OwnResults> own_done;  // with `mutex`
  std::atomic<bool> own_stop{false}, own_finished{false};
  Holder& own = holders[0];
  std::thread own_thread([&] {
    for (;;) {
      OwnResults r;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!own_stop.load()) take(own);
        r.batch = own.batch;
      }
      if (r.batch.empty()) break;
      try {
        r.results = local(r.batch);
      } catch (...) {
        r.error = std::current_exception();
      }
      const bool failed = r.error != nullptr;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        measure(own);
        own.batch.clear();
        own_done.push_back(std::move(r));
      }
      if (failed) break;
    }
    own_finished.store(true);
  });
  // Whatever happens here, the thread is stopped after its batch and joined.
  struct Join {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Join() {
      stop.store(true);
      thread.join();
    }
  } join{own_stop, own_thread};

  std::optional<Clock::time_point> stop_since;
  for (;;) {
    if (outcome.stop_signal == 0) outcome.stop_signal = StopSignals::stop_signal();
    const bool stopping = outcome.stop_signal != 0;
    if (stopping && !stop_since) {
      stop_since = Clock::now();
      own_stop.store(true);
    }
    std::deque<OwnResults> own_results;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      own_results.swap(own_done);
    }
    for (OwnResults& r : own_results) {
      if (r.error) std::rethrow_exception(r.error);
      accept(r.batch, r.results);
      outcome.done += r.batch.size();
    }

    if (std::optional<RankMessage> m = ranks.receive(std::chrono::milliseconds(10))) {
      Holder& h = holders[static_cast<std::size_t>(m->from)];
      WireReader r(m->bytes);
      if (m->tag == kError) {
        const std::string host = r.text();
        throw Error(who(m->from, host) + ": " + r.text());
      }
      BUBBLESIM_CHECK(m->tag == kRequest, "unexpected message " + std::to_string(m->tag));
      h.host = r.text();
      const bool leaving = r.number<std::uint8_t>() != 0;
      const std::string results = r.text();
      if (!h.batch.empty()) {
        accept(h.batch, results);
        outcome.done += h.batch.size();
        measure(h);
        h.batch.clear();
      }
      if (leaving) {
        h.finished = true;
      } else {
        if (!stopping) {
          const std::lock_guard<std::mutex> lock(mutex);
          take(h);
        }
        if (h.batch.empty()) {
          ranks.send(m->from, kStop, "", kSmallMessage);
          h.finished = true;
        } else {
          WireWriter w;
          w.reserve(8 * (h.batch.size() + 1));
          w.number<std::uint64_t>(h.batch.size());
          for (const std::size_t item : h.batch)
            w.number<std::uint64_t>(item);
          ranks.send(m->from, kBatch, w.bytes(), Seconds(options.rank_timeout_s));
        }
      }
    }
    if (tick) tick(outcome.done);

    const auto now = Clock::now();
    bool all_finished = own_finished.load();
    {
      const std::lock_guard<std::mutex> lock(mutex);
      all_finished = all_finished && own_done.empty() && (stopping || next == items.size());
    }
    for (std::size_t rank = 1; rank < n_ranks; ++rank) {
      const Holder& h = holders[rank];
      all_finished = all_finished && h.finished;
      const std::string name = who(static_cast<int>(rank), h.host.empty() ? "?" : h.host);
      // After a signal, a rank gets a grace of kStopGraceSeconds to return its batch: under
      // mpirun the signal may come from a rank that died.
      if (!h.batch.empty() && stop_since &&
          Seconds(now - *stop_since).count() > kStopGraceSeconds) {
        throw Error(fmt::format("stopped by {}, and {} did not return its batch within {:.0f} s",
                                StopSignals::name(outcome.stop_signal), name, kStopGraceSeconds));
      }
      if (!h.batch.empty() && Seconds(now - h.since).count() > options.rank_timeout_s) {
        throw Error(fmt::format(
            "{} sent nothing for {:.0f} s, holding {} items since: it died or hangs (see "
            "--rank-timeout)",
            name, Seconds(now - h.since).count(), h.batch.size()));
      }
    }
    if (all_finished) break;
  }
  return outcome;
}

int serve(Ranks& ranks, const EvaluateBatch& evaluate, double timeout_s) {
  std::string results;
  for (;;) {
    const bool leaving = StopSignals::stop_signal() != 0;
    WireWriter request;
    request.reserve(results.size() + 128);
    request.text(ranks.host());
    request.number<std::uint8_t>(leaving ? 1 : 0);
    request.text(results);
    send_to_rank0(ranks, kRequest, request.bytes(), timeout_s);
    if (leaving) return 0;
    const RankMessage m = from_rank0(ranks, timeout_s);
    if (m.tag == kStop) return 0;
    BUBBLESIM_CHECK(m.tag == kBatch, "unexpected message " + std::to_string(m.tag));
    WireReader r(m.bytes);
    std::vector<std::size_t> batch(r.number<std::uint64_t>());
    for (std::size_t& item : batch)
      item = r.number<std::uint64_t>();
    try {
      results = evaluate(batch);
    } catch (const std::exception& e) {
      WireWriter w;
      w.text(ranks.host());
      w.text(e.what());
      send_to_rank0(ranks, kError, w.bytes(), timeout_s);
      return 1;
    }
  }
}

}  // namespace bubblesim::cli
