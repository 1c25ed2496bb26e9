// NCCL's NVTX payloads (NCCL >= 2.16; schemas of src/include/nvtx_payload_schemas.h, checked
// against NCCL 2.28.9): every NCCL API range of the domain "NCCL" carries one payload of a
// static schema whose id is NVTX_PAYLOAD_SCHEMA_ID_STATIC_START (1 << 24) plus NCCL's schema
// number. The layouts begin with {uint64_t commHash; size_t bytes;}; Send and Recv add
// {int peer;}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "profiler/capture.h"

namespace bubblesim::profiler {

inline constexpr std::uint64_t kNcclSchemaBase = std::uint64_t{1} << 24;
// NCCL's schema numbers (NVTX_SID_* in NCCL's src/include/nvtx.h).
inline constexpr std::uint64_t kNcclSchemaAllGather = kNcclSchemaBase + 4;
inline constexpr std::uint64_t kNcclSchemaAllReduce = kNcclSchemaBase + 5;
inline constexpr std::uint64_t kNcclSchemaBroadcast = kNcclSchemaBase + 6;
inline constexpr std::uint64_t kNcclSchemaReduceScatter = kNcclSchemaBase + 7;
inline constexpr std::uint64_t kNcclSchemaReduce = kNcclSchemaBase + 8;
inline constexpr std::uint64_t kNcclSchemaSend = kNcclSchemaBase + 9;
inline constexpr std::uint64_t kNcclSchemaRecv = kNcclSchemaBase + 10;
inline constexpr std::uint64_t kNcclSchemaAllToAll = kNcclSchemaBase + 16;

// The call described by the payload `data` (`size` bytes) of schema `schema_id` in the range
// named `function`; nothing for a schema that is not one of the above or a payload too short
// for its layout.
std::optional<NcclCall> decode_nccl_payload(std::string_view function, std::uint64_t schema_id,
                                            const void* data, std::size_t size);

}  // namespace bubblesim::profiler
