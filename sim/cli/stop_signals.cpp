#include "sim/cli/stop_signals.h"

#include <atomic>
#include <csignal>

namespace bubblesim::cli {

namespace {

// A signal handler can only reach static storage: these are the only mutable globals, and only
// the handlers below set them.
std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_save_request{false};
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
  g_stop_signal.store(signal);
  // A second signal ends the program at once (the file then holds the last table written).
  std::signal(signal, SIG_DFL);
}

extern "C" void on_save_signal(int) {
  g_save_request.store(true);
}

}  // namespace

StopSignals::StopSignals()
    : previous_int_(std::signal(SIGINT, on_stop_signal)),
      previous_term_(std::signal(SIGTERM, on_stop_signal)),
      previous_cont_(std::signal(SIGCONT, on_save_signal)) {
  g_stop_signal.store(0);
  g_save_request.store(false);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, previous_int_);
  std::signal(SIGTERM, previous_term_);
  std::signal(SIGCONT, previous_cont_);
}

bool StopSignals::take_save_request() {
  return g_save_request.exchange(false);
}

int StopSignals::stop_signal() {
  return g_stop_signal.load();
}

const char* StopSignals::name(int signal) {
  return signal == SIGINT ? "Ctrl-C" : signal == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace bubblesim::cli
