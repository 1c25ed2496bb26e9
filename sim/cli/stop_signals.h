// Ctrl-C (SIGINT) and SIGTERM (what Slurm and mpirun send at a time limit or on scancel) as a
// request to stop cleanly: a long command checks stop_signal() between batches, writes what it
// has and exits with 128 + the signal. SIGCONT as a request to save now: Open MPI's mpirun
// sends it to every rank 1 s before it terminates them (a rank died, or mpirun got a signal),
// and a rank may be killed soon after the SIGTERM that follows.
#pragma once

namespace bubblesim::cli {

// Installs the handlers for its lifetime (restoring the previous ones after) and clears the
// request. A second signal of the same kind ends the program at once (default action).
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received since construction (SIGINT or SIGTERM), or 0.
  static int stop_signal();
  // Whether a SIGCONT came since the last call (or construction); clears it.
  static bool take_save_request();
  // "Ctrl-C" or "SIGTERM".
  static const char* name(int signal);

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
  void (*previous_cont_)(int);
};

}  // namespace bubblesim::cli
