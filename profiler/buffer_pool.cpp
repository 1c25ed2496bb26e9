#include "profiler/buffer_pool.h"

#include <algorithm>
#include <cstring>

namespace bubblesim::profiler {

BufferPool::BufferPool(std::size_t buffers, std::size_t buffer_bytes)
    : buffer_bytes_((buffer_bytes + 7) / 8 * 8),
      storage_(new std::uint64_t[buffers * buffer_bytes_ / 8]()),
      busy_(buffers, false) {
  free_.reserve(buffers);
  for (std::size_t i = buffers; i-- > 0;)
    free_.push_back(static_cast<std::uint32_t>(i));  // buffer 0 is handed out first
  stats_.buffers = buffers;
}

std::uint8_t* BufferPool::acquire() {
  const std::lock_guard lock(mutex_);
  if (free_.empty()) {
    ++stats_.exhausted;
    return nullptr;
  }
  const std::uint32_t i = free_.back();
  free_.pop_back();
  busy_[i] = true;
  stats_.in_use = busy_.size() - free_.size();
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return reinterpret_cast<std::uint8_t*>(storage_.get()) + i * buffer_bytes_;
}

bool BufferPool::release(std::uint8_t* buffer, std::size_t used_bytes) {
  const auto* base = reinterpret_cast<std::uint8_t*>(storage_.get());
  const std::size_t total = busy_.size() * buffer_bytes_;
  const std::lock_guard lock(mutex_);
  if (buffer < base || buffer >= base + total ||
      static_cast<std::size_t>(buffer - base) % buffer_bytes_ != 0) {
    ++stats_.unknown_releases;
    return false;
  }
  const auto i =
      static_cast<std::uint32_t>(static_cast<std::size_t>(buffer - base) / buffer_bytes_);
  if (!busy_[i]) {
    ++stats_.unknown_releases;
    return false;
  }
  std::memset(buffer, 0, std::min(used_bytes, buffer_bytes_));
  busy_[i] = false;
  free_.push_back(i);
  stats_.in_use = busy_.size() - free_.size();
  return true;
}

BufferPoolStats BufferPool::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace bubblesim::profiler
