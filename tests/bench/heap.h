// Live-heap accounting for the benchmarks: heap.cpp replaces the global operator new and
// delete of the benchmark executable to count the bytes allocated (malloc_usable_size).
#pragma once

#include <cstddef>

namespace bubblesim::bench {

// Bytes allocated with new and not yet deleted.
std::size_t live_heap_bytes();
// Starts a new peak at the current live bytes; peak_heap_bytes() is the highest since.
void reset_peak_heap();
std::size_t peak_heap_bytes();

}  // namespace bubblesim::bench
