#include "profiler/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace bubblesim::profiler {
namespace {

TEST(ProfilerBufferPool, HandsOutDistinctAlignedZeroedBuffersUntilEmpty) {
  BufferPool pool(3, 1001);
  EXPECT_EQ(pool.buffer_bytes(), 1008u);  // a multiple of 8
  std::set<std::uint8_t*> seen;
  for (int i = 0; i < 3; ++i) {
    std::uint8_t* b = pool.acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 8, 0u);
    for (std::size_t j = 0; j < pool.buffer_bytes(); ++j)
      ASSERT_EQ(b[j], 0);
    seen.insert(b);
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.stats().exhausted, 1u);
  EXPECT_EQ(pool.stats().in_use, 3u);
  EXPECT_EQ(pool.stats().peak_in_use, 3u);
}

TEST(ProfilerBufferPool, ReleaseZeroesAndRejectsForeignOrFreeBuffers) {
  BufferPool pool(1, 64);
  std::uint8_t* b = pool.acquire();
  for (int i = 0; i < 40; ++i)
    b[i] = 0xAB;
  EXPECT_TRUE(pool.release(b, 40));
  EXPECT_FALSE(pool.release(b, 40));  // already free
  std::uint8_t other[64];
  EXPECT_FALSE(pool.release(other, 0));
  EXPECT_FALSE(pool.release(b + 8, 0));  // inside, not a buffer start
  EXPECT_EQ(pool.stats().unknown_releases, 3u);
  std::uint8_t* again = pool.acquire();
  EXPECT_EQ(again, b);
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(again[i], 0);
}

TEST(ProfilerBufferPool, ConcurrentAcquireRelease) {
  BufferPool pool(4, 256);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool] {
      for (int i = 0; i < 2000; ++i) {
        std::uint8_t* b = pool.acquire();
        if (b == nullptr) continue;
        b[0] = 1;
        ASSERT_TRUE(pool.release(b, 1));
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  const BufferPoolStats s = pool.stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_LE(s.peak_in_use, 4u);
  EXPECT_EQ(s.unknown_releases, 0u);
}

}  // namespace
}  // namespace bubblesim::profiler
