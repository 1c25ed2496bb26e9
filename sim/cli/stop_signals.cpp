#include "sim/cli/stop_signals.h"

#include <atomic>
#include <csignal>

namespace bubblesim::cli {

namespace {

// A signal handler can only reach static storage: this is the one mutable global, and only
// on_stop_signal writes it.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
  g_stop_signal.store(signal);
  // A second signal ends the program at once (the file then holds the last table written).
  std::signal(signal, SIG_DFL);
}

}  // namespace

StopSignals::StopSignals()
    : previous_int_(std::signal(SIGINT, on_stop_signal)),
      previous_term_(std::signal(SIGTERM, on_stop_signal)) {
  g_stop_signal.store(0);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, previous_int_);
  std::signal(SIGTERM, previous_term_);
}

int StopSignals::stop_signal() {
  return g_stop_signal.load();
}

const char* StopSignals::name(int signal) {
  return signal == SIGINT ? "Ctrl-C" : signal == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace bubblesim::cli
