#include "profiler/nccl_payload.h"

#include <cstring>
#include <string>

namespace bubblesim::profiler {

std::optional<NcclCall> decode_nccl_payload(std::string_view function, std::uint64_t schema_id,
                                            const void* data, std::size_t size) {
  using traces::Collective;
  Collective collective = Collective::Unknown;
  bool has_peer = false;
  switch (schema_id) {
    case kNcclSchemaAllGather:
      collective = Collective::AllGather;
      break;
    case kNcclSchemaAllReduce:
      collective = Collective::AllReduce;
      break;
    case kNcclSchemaBroadcast:
      collective = Collective::Broadcast;
      break;
    case kNcclSchemaReduceScatter:
      collective = Collective::ReduceScatter;
      break;
    case kNcclSchemaReduce:
      collective = Collective::Reduce;
      break;
    case kNcclSchemaSend:
    case kNcclSchemaRecv:
      collective = Collective::SendRecv;
      has_peer = true;
      break;
    case kNcclSchemaAllToAll:
      collective = Collective::AllToAll;
      break;
    default:
      return std::nullopt;
  }
  struct Head {
    std::uint64_t comm_hash;
    std::size_t bytes;
  };
  struct P2p {
    std::uint64_t comm_hash;
    std::size_t bytes;
    int peer;
  };
  const std::size_t needed = has_peer ? offsetof(P2p, peer) + sizeof(int) : sizeof(Head);
  if (data == nullptr || size < needed) return std::nullopt;
  NcclCall call;
  call.collective = collective;
  call.function.assign(function);
  Head head;
  std::memcpy(&head, data, sizeof head);  // the payload need not be aligned
  call.comm_hash = head.comm_hash;
  call.bytes = static_cast<std::int64_t>(head.bytes);
  if (has_peer) {
    std::memcpy(&call.peer, static_cast<const char*>(data) + offsetof(P2p, peer), sizeof(int));
  }
  return call;
}

}  // namespace bubblesim::profiler
