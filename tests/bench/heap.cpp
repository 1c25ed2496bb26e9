#include "heap.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};

void track(std::ptrdiff_t delta) {
  const std::size_t live =
      g_live.fetch_add(static_cast<std::size_t>(delta)) + static_cast<std::size_t>(delta);
  std::size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

}  // namespace

void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  track(static_cast<std::ptrdiff_t>(malloc_usable_size(p)));
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  track(-static_cast<std::ptrdiff_t>(malloc_usable_size(p)));
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}

namespace bubblesim::bench {

std::size_t live_heap_bytes() {
  return g_live.load();
}
void reset_peak_heap() {
  g_peak.store(g_live.load());
}
std::size_t peak_heap_bytes() {
  return g_peak.load();
}

}  // namespace bubblesim::bench
