// The work spread of `mpirun ... bubblesim sweep` (sim/cli/spread.h) on an in-process job: ranks
// are threads exchanging messages through mailboxes, so the coordination is checked in every
// build, with or without MPI.
#include "sim/cli/spread.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "sim/cli/wire.h"
#include "sim/error.h"

namespace bubblesim::cli {
namespace {

// N ranks in one process. abort() makes every receive throw, as MPI_Abort ends every rank.
class FakeJob {
 public:
  explicit FakeJob(int size) : boxes_(static_cast<std::size_t>(size)) {}

  class Rank : public Ranks {
   public:
    Rank(FakeJob& job, int rank) : job_(job), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(job_.boxes_.size()); }
    std::string host() const override { return "host" + std::to_string(rank_); }
    void send(int to, int tag, const std::string& bytes, std::chrono::duration<double>) override {
      const std::lock_guard<std::mutex> lock(job_.mutex_);
      job_.boxes_[static_cast<std::size_t>(to)].push_back({rank_, tag, bytes});
      job_.changed_.notify_all();
    }
    std::optional<RankMessage> receive(std::chrono::duration<double> timeout) override {
      std::unique_lock<std::mutex> lock(job_.mutex_);
      std::deque<RankMessage>& box = job_.boxes_[static_cast<std::size_t>(rank_)];
      job_.changed_.wait_for(lock, timeout, [&] { return job_.aborted_ || !box.empty(); });
      if (job_.aborted_) throw Error("aborted");
      if (box.empty()) return std::nullopt;
      RankMessage m = std::move(box.front());
      box.pop_front();
      return m;
    }
    void abort(int) override {
      const std::lock_guard<std::mutex> lock(job_.mutex_);
      job_.aborted_ = true;
      job_.changed_.notify_all();
    }

   private:
    FakeJob& job_;
    int rank_;
  };

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<RankMessage>> boxes_;
  bool aborted_ = false;
};

// Each item's result: its number squared, and which rank computed it.
std::string square(const std::vector<std::size_t>& items, int rank,
                   std::chrono::microseconds per_item) {
  WireWriter w;
  for (const std::size_t i : items) {
    std::this_thread::sleep_for(per_item);
    w.number<std::uint64_t>(i * i);
    w.number<std::int32_t>(rank);
  }
  return w.bytes();
}

struct Workers {
  std::vector<std::thread> threads;
  std::vector<int> status;
  void join() {
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
  ~Workers() { join(); }
};

// Starts ranks 1..n-1 of `job`: each prepares (`error` for `failing`), reports and serves.
void start(FakeJob& job, std::vector<std::unique_ptr<FakeJob::Rank>>& ranks, Workers& workers,
           int n, const std::function<std::string(int rank, const std::vector<std::size_t>&)>& f,
           int failing = -1, const std::string& fingerprint = "study") {
  workers.status.assign(static_cast<std::size_t>(n), -2);
  for (int r = 0; r < n; ++r)
    ranks.push_back(std::make_unique<FakeJob::Rank>(job, r));
  for (int r = 1; r < n; ++r) {
    workers.threads.emplace_back([&, r, failing, fingerprint, f] {
      Ranks& me = *ranks[static_cast<std::size_t>(r)];
      try {
        const int status = report_ready(me, r == failing ? "cannot read m.yaml" : "",
                                        r == 2 ? fingerprint : "study", 2);
        workers.status[static_cast<std::size_t>(r)] =
            status >= 0
                ? status
                : serve(me, [&](const std::vector<std::size_t>& items) { return f(r, items); });
      } catch (const Error&) {
        workers.status[static_cast<std::size_t>(r)] = -1;  // aborted
      }
    });
  }
}

TEST(Spread, EveryItemIsEvaluatedOnceAndTheWorkIsShared) {
  FakeJob job(3);
  std::vector<std::unique_ptr<FakeJob::Rank>> ranks;
  Workers workers;
  const auto f = [](int rank, const std::vector<std::size_t>& items) {
    return square(items, rank, std::chrono::microseconds(500));
  };
  start(job, ranks, workers, 3, f);
  std::vector<std::size_t> items;
  for (std::size_t i = 0; i < 600; ++i) {
    if (i % 7 != 3) items.push_back(i);  // not every number: the items are what is asked
  }
  const std::vector<int> threads = start_workers(*ranks[0], "study", 1, 10);
  EXPECT_EQ(threads, (std::vector<int>{1, 2, 2}));
  std::map<std::size_t, std::uint64_t> results;
  std::map<int, std::size_t> by_rank;
  std::size_t ticks_done = 0;
  SpreadOptions options;
  options.threads = threads;
  options.batch_seconds = 0.02;
  const SpreadOutcome outcome = coordinate(
      *ranks[0], items, [&](const std::vector<std::size_t>& batch) { return f(0, batch); },
      [&](const std::vector<std::size_t>& batch, const std::string& bytes) {
        WireReader r(bytes);
        for (const std::size_t i : batch) {
          EXPECT_TRUE(results.emplace(i, r.number<std::uint64_t>()).second) << "twice: " << i;
          ++by_rank[r.number<std::int32_t>()];
        }
        EXPECT_TRUE(r.done());
      },
      [&](std::size_t done) {
        EXPECT_GE(done, ticks_done);
        ticks_done = done;
      },
      options);
  EXPECT_EQ(outcome.done, items.size());
  EXPECT_EQ(outcome.stop_signal, 0);
  ASSERT_EQ(results.size(), items.size());
  for (const std::size_t i : items)
    EXPECT_EQ(results[i], i * i) << i;
  // 600 items of 0.5 ms: every rank had a share (the first batch of each alone is 4 per thread).
  for (const int rank : {0, 1, 2})
    EXPECT_GE(by_rank[rank], 4u) << "rank " << rank;
  workers.join();
  EXPECT_EQ(workers.status, (std::vector<int>{-2, 0, 0}));  // told to stop, each returned 0
}

TEST(Spread, AWorkerThatCannotPrepareIsOneErrorNamingItAndEveryWorkerQuits) {
  FakeJob job(4);
  std::vector<std::unique_ptr<FakeJob::Rank>> ranks;
  auto workers = std::make_unique<Workers>();
  start(
      job, ranks, *workers, 4, [](int, const std::vector<std::size_t>&) { return ""; }, 2);
  try {
    start_workers(*ranks[0], "study", 1, 10);
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "rank 2 on host2: cannot read m.yaml");
  }
  workers->join();
  EXPECT_EQ(workers->status, (std::vector<int>{-2, 0, 0, 0}));  // each told to quit with 0
}

TEST(Spread, AWorkerThatReadOtherInputsIsRefused) {
  FakeJob job(3);
  std::vector<std::unique_ptr<FakeJob::Rank>> ranks;
  auto workers = std::make_unique<Workers>();
  start(
      job, ranks, *workers, 3, [](int, const std::vector<std::size_t>&) { return ""; }, -1,
      "another study");
  try {
    start_workers(*ranks[0], "study", 1, 10);
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 on host2: read other inputs than rank 0"),
              std::string::npos)
        << e.what();
  }
  workers->join();
  EXPECT_EQ(workers->status, (std::vector<int>{-2, 0, 0}));
}

TEST(Spread, AFailingOrSilentWorkerEndsTheCoordinationWithItsRank) {
  for (const bool silent : {false, true}) {
    FakeJob job(3);
    std::vector<std::unique_ptr<FakeJob::Rank>> ranks;
    auto workers = std::make_unique<Workers>();
    const auto f = [silent](int rank, const std::vector<std::size_t>& items) -> std::string {
      if (rank == 1) {
        if (!silent) throw InvalidArgument("out of memory");
        std::this_thread::sleep_for(std::chrono::milliseconds(800));
      }
      return square(items, rank, std::chrono::microseconds(200));
    };
    start(job, ranks, *workers, 3, f);
    SpreadOptions options;
    options.threads = start_workers(*ranks[0], "study", 1, 10);
    options.rank_timeout_s = 0.3;
    std::vector<std::size_t> items(2000);
    for (std::size_t i = 0; i < items.size(); ++i)
      items[i] = i;
    std::size_t accepted = 0;
    try {
      coordinate(
          *ranks[0], items, [&](const std::vector<std::size_t>& batch) { return f(0, batch); },
          [&](const std::vector<std::size_t>& batch, const std::string&) {
            accepted += batch.size();
          },
          {}, options);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(
          what.find(silent ? "rank 1 on host1 sent nothing for" : "rank 1 on host1: out of memory"),
          std::string::npos)
          << what;
    }
    EXPECT_LT(accepted, items.size());
    ranks[0]->abort(1);  // as sweep does: the other ranks are waiting
    workers->join();
    EXPECT_EQ(workers->status[1], silent ? -1 : 1);  // aborted while waiting; or failed
  }
}

TEST(Spread, AWorkerThatHearsNothingFromRankZeroGivesUp) {
  FakeJob job(2);
  FakeJob::Rank worker(job, 1);
  try {
    report_ready(worker, "", "study", 1, 0.1);
    ADD_FAILURE() << "no error";
  } catch (const RankZeroLost& e) {
    EXPECT_STREQ(e.what(),
                 "rank 1 on host1: rank 0 sent nothing for 0.1 s: it died or hangs (see "
                 "--rank-timeout)");
  }
}

}  // namespace
}  // namespace bubblesim::cli
