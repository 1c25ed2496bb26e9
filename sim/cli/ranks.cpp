#include "sim/cli/ranks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "sim/error.h"

namespace bubblesim::cli {

#ifdef BUBBLESIM_HAVE_MPI
// ranks_mpi.cpp: MPI's ranks (MPI_Init here; MPI_Finalize when destroyed).
std::unique_ptr<Ranks> make_mpi_ranks();
#endif

namespace {

class SingleProcess : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string host() const override {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
  }
  void send(int to, int, const std::string&, std::chrono::duration<double>) override {
    throw InternalError("send to rank " + std::to_string(to) + " in a single process");
  }
  std::optional<RankMessage> receive(std::chrono::duration<double>) override { return {}; }
  void abort(int) override {}
};

int env_count(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  return end != text && n > 0 && n < 1'000'000'000 ? static_cast<int>(n) : 0;
}

}  // namespace

int launched_tasks() {
  int tasks = std::max(env_count("OMPI_COMM_WORLD_SIZE"), env_count("PMI_SIZE"));
  if (std::getenv("SLURM_PROCID") != nullptr) {
    tasks = std::max(tasks, env_count("SLURM_STEP_NUM_TASKS"));
  }
  return std::max(tasks, 1);
}

std::unique_ptr<Ranks> make_ranks() {
  const int tasks = launched_tasks();
  if (tasks == 1) return std::make_unique<SingleProcess>();
#ifdef BUBBLESIM_HAVE_MPI
  std::unique_ptr<Ranks> ranks = make_mpi_ranks();
  if (ranks->size() != tasks) {
    throw InvalidArgument("started as one of " + std::to_string(tasks) + " tasks, but MPI sees " +
                          std::to_string(ranks->size()) +
                          " rank(s): under Slurm, give srun --mpi=pmix (or pmi2)");
  }
  return ranks;
#else
  throw InvalidArgument("started as one of " + std::to_string(tasks) +
                        " tasks (mpirun or srun), but this bubblesim is built without MPI: "
                        "rebuild with libopenmpi-dev installed, or run each task with "
                        "--shard K/N (docs/sweeps.md)");
#endif
}

}  // namespace bubblesim::cli
