// The host buffers handed to CUPTI's buffer-request callback: all allocated up front, so that
// the request callback (which runs on the thread that launches a kernel) never allocates, and
// handed over zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER=1 lets CUPTI skip zeroing
// them on the launching thread). Thread-safe: CUPTI requests and completes buffers from its
// worker thread and from application threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace bubblesim::profiler {

struct BufferPoolStats {
  std::size_t buffers = 0;
  std::size_t in_use = 0;
  std::size_t peak_in_use = 0;
  std::uint64_t exhausted = 0;  // acquire() calls that found no free buffer
  std::uint64_t unknown_releases = 0;
};

class BufferPool {
 public:
  // `buffers` buffers of `buffer_bytes` bytes each (rounded up to a multiple of 8), 8-byte
  // aligned and zeroed.
  BufferPool(std::size_t buffers, std::size_t buffer_bytes);

  std::size_t buffer_bytes() const { return buffer_bytes_; }

  // A free buffer, or nullptr when all are in use (counted in stats().exhausted). O(1).
  std::uint8_t* acquire();

  // Zeroes the first `used_bytes` bytes of a buffer from acquire() and makes it free again.
  // False (and counted) for a pointer that is not one of the pool's buffers or already free.
  bool release(std::uint8_t* buffer, std::size_t used_bytes);

  BufferPoolStats stats() const;

 private:
  std::size_t buffer_bytes_;
  std::unique_ptr<std::uint64_t[]> storage_;  // uint64_t: 8-byte alignment
  mutable std::mutex mutex_;
  std::vector<std::uint32_t> free_;  // indices of free buffers
  std::vector<bool> busy_;
  BufferPoolStats stats_;
};

}  // namespace bubblesim::profiler
