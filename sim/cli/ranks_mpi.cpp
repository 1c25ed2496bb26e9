// MPI's ranks (ranks.h), built only where CMake finds MPI (BUBBLESIM_WITH_MPI).
#include <mpi.h>

#include <algorithm>
#include <thread>

#include "sim/cli/ranks.h"
#include "sim/error.h"

namespace bubblesim::cli {

namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

class MpiRanks : public Ranks {
 public:
  MpiRanks() {
    int provided = 0;
    // Only the thread that made the Ranks calls MPI; the simulations run on other threads.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    // Failures come back as codes (reported as errors), not as an abort inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    host_.assign(name, static_cast<std::size_t>(length));
  }
  ~MpiRanks() override { MPI_Finalize(); }
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string host() const override { return host_; }

  void send(int to, int tag, const std::string& bytes,
            std::chrono::duration<double> timeout) override {
    // Not MPI_Send: a message above the eager limit would block it until `to` takes it,
    // forever for a stopped rank, and rank 0 would never see the timeout.
    MPI_Request request;
    int rc = MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag,
                       MPI_COMM_WORLD, &request);
    const auto until = std::chrono::steady_clock::now() + timeout;
    auto nap = std::chrono::microseconds(20);
    for (int done = 0; rc == MPI_SUCCESS;) {
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS || done != 0) break;
      if (std::chrono::steady_clock::now() >= until) {
        throw Error("MPI: rank " + std::to_string(to) + " did not take a message for " +
                    format_number(std::chrono::duration<double>(timeout).count()) + " s");
      }
      std::this_thread::sleep_for(nap);
      nap = std::min(2 * nap, std::chrono::microseconds(1000));
    }
    if (rc != MPI_SUCCESS) {
      throw Error("MPI: cannot send to rank " + std::to_string(to) + ": " + mpi_error_text(rc));
    }
  }

  std::optional<RankMessage> receive(std::chrono::duration<double> timeout) override {
    // Open MPI's blocking receive spins on a core; probing with sleeps that grow from 100 us
    // to 1 ms leaves the cores to the simulations, at a cost of at most ~1 ms of latency per
    // message (batches last a quarter of a second: spread.h).
    const auto until = std::chrono::steady_clock::now() + timeout;
    auto nap = std::chrono::microseconds(100);
    for (;;) {
      int flag = 0;
      MPI_Status status;
      int rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (rc != MPI_SUCCESS) throw Error("MPI: cannot receive: " + mpi_error_text(rc));
      if (flag != 0) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        RankMessage message{status.MPI_SOURCE, status.MPI_TAG,
                            std::string(static_cast<std::size_t>(count), '\0')};
        rc = MPI_Recv(message.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          throw Error("MPI: cannot receive from rank " + std::to_string(status.MPI_SOURCE) + ": " +
                      mpi_error_text(rc));
        }
        return message;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) return std::nullopt;
      std::this_thread::sleep_for(
          std::min(nap, std::chrono::duration_cast<std::chrono::microseconds>(until - now)));
      nap = std::min(2 * nap, std::chrono::microseconds(1000));
    }
  }

  void abort(int status) override { MPI_Abort(MPI_COMM_WORLD, status); }

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
};

}  // namespace

std::unique_ptr<Ranks> make_mpi_ranks() {
  return std::make_unique<MpiRanks>();
}

}  // namespace bubblesim::cli
