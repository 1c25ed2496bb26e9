#include "profiler/nccl_payload.h"

#include <gtest/gtest.h>

#include <cstring>

namespace bubblesim::profiler {
namespace {

// NCCL's payload structs (src/include/nvtx_payload_schemas.h).
struct P2p {
  std::uint64_t comm;
  std::size_t bytes;
  int peer;
};
struct AllReduce {
  std::uint64_t comm;
  std::size_t bytes;
  int op;
};

TEST(ProfilerNcclPayload, SendRecvAndCollectives) {
  const P2p send{0xABCDEF, 1 << 20, 5};
  const auto s = decode_nccl_payload("ncclSend", kNcclSchemaSend, &send, sizeof send);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->collective, traces::Collective::SendRecv);
  EXPECT_EQ(s->function, "ncclSend");
  EXPECT_EQ(s->comm_hash, 0xABCDEFu);
  EXPECT_EQ(s->bytes, 1 << 20);
  EXPECT_EQ(s->peer, 5);

  const AllReduce ar{1, 4096, 0};
  const auto a = decode_nccl_payload("ncclAllReduce", kNcclSchemaAllReduce, &ar, sizeof ar);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->collective, traces::Collective::AllReduce);
  EXPECT_EQ(a->bytes, 4096);
  EXPECT_EQ(a->peer, -1);

  // Unaligned payload bytes decode the same.
  alignas(8) unsigned char raw[sizeof(P2p) + 1];
  std::memcpy(raw + 1, &send, sizeof send);
  const auto u = decode_nccl_payload("ncclRecv", kNcclSchemaRecv, raw + 1, sizeof send);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->peer, 5);
  EXPECT_EQ(u->bytes, 1 << 20);
}

TEST(ProfilerNcclPayload, UnknownSchemaOrShortPayload) {
  const P2p send{1, 2, 3};
  EXPECT_FALSE(decode_nccl_payload("ncclSend", kNcclSchemaBase + 99, &send, sizeof send));
  EXPECT_FALSE(decode_nccl_payload("ncclSend", kNcclSchemaSend, &send, 16));
  EXPECT_FALSE(decode_nccl_payload("ncclSend", kNcclSchemaSend, nullptr, sizeof send));
  EXPECT_TRUE(decode_nccl_payload("ncclAllGather", kNcclSchemaAllGather, &send, 16));
}

}  // namespace
}  // namespace bubblesim::profiler
