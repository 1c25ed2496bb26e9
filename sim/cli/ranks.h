// The processes one command runs on (docs/sweeps.md): a single process, or the ranks of an MPI
// job started by `mpirun -n N` or `srun`. Rank 0 coordinates; ranks exchange byte strings with
// a tag (wire.h). Only the thread that made the Ranks may call its functions.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace bubblesim::cli {

struct RankMessage {
  int from = 0;  // the sending rank
  int tag = 0;
  std::string bytes;
};

class Ranks {
 public:
  virtual ~Ranks() = default;
  // This process's rank, from 0, and the number of ranks (1 without MPI).
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The machine this rank runs on, for messages.
  virtual std::string host() const = 0;
  // Sends `bytes` to rank `to` (not this one) and returns once they are on their way. A large
  // message waits for `to` to take it: after `timeout` without that (a stopped or hung rank),
  // throws Error; so does a failure of the job's communication.
  virtual void send(int to, int tag, const std::string& bytes,
                    std::chrono::duration<double> timeout) = 0;
  // The next message from any rank, or nothing after `timeout` without one. Waits by polling
  // with sleeps of up to 1 ms, so a waiting rank leaves its cores to the simulations.
  virtual std::optional<RankMessage> receive(std::chrono::duration<double> timeout) = 0;
  // Ends every rank of the job at once with `status`, for a failure that leaves ranks waiting
  // for each other; does nothing on a single process.
  virtual void abort(int status) = 0;
};

// How many tasks the launcher started, from its environment: OMPI_COMM_WORLD_SIZE (Open MPI's
// mpirun), PMI_SIZE (MPICH, Slurm's PMI) or SLURM_STEP_NUM_TASKS with SLURM_PROCID (srun); 1
// when none is set (a plain start, or a Slurm batch script outside srun).
int launched_tasks();

// One process when launched_tasks() is 1; else MPI's ranks (initialised here, finalised by the
// destructor; one per process). Throws InvalidArgument when started as several tasks but built
// without MPI, or when MPI sees fewer ranks than the launcher started (srun without --mpi).
std::unique_ptr<Ranks> make_ranks();

}  // namespace bubblesim::cli
