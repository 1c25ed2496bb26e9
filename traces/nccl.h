// NCCL kernels and collectives: recognising NCCL kernels by name across NCCL versions and
// classifying them by collective.
//
// Kernel names by NCCL version (all recognised):
//   <= 2.7          nccl<Coll><Algo><Proto>Kernel_<op>_<type>   ncclAllReduceRingLLKernel_sum_f32
//   2.8 .. 2.18     ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<type>
//   ncclKernel_AllReduce_RING_LL_Sum_float 2.19 .. ncclDevKernel_<Coll>_<Op>_<type>_<ALGO>_<PROTO>,
//   ncclDevKernel_SendRecv,
//                   ncclDevKernel_Generic (no collective in the name)
//   2.27 ..         ncclSymDevKernel_<Coll>_<variant>             ncclSymDevKernel_AllGather_LL
// A demangled signature after the name ("(ncclDevComm*, ...)") is ignored.
#pragma once

#include <cstdint>
#include <string_view>

namespace bubblesim::traces {

enum class Collective : std::uint8_t {
  Unknown,  // an NCCL kernel whose collective is named nowhere (ncclDevKernel_Generic)
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  SendRecv,  // point-to-point send, receive or both
  AllToAll,
};
inline constexpr int kNumCollectives = 8;

// "unknown", "all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "send/recv",
// "all-to-all".
std::string_view to_string(Collective collective);

// True for the name of an NCCL kernel of any version above (the prefix "nccl" followed by
// "Kernel_", "DevKernel_", "SymDevKernel_", or a collective name and "Kernel_").
bool is_nccl_kernel(std::string_view kernel_name);

// The collective that an NCCL kernel's name states; Unknown when it states none.
// Precondition: is_nccl_kernel(kernel_name).
Collective collective_of_kernel(std::string_view kernel_name);

// The collective that a piece of text names, ignoring case and '_': the "Collective name"
// argument PyTorch records on NCCL kernels ("allreduce", "_allgather_base",
// "reduce_scatter_tensor_coalesced", "all_to_allv", "send"...) or a `nccl:*` annotation
// ("nccl:all_to_all"; the prefix is skipped). Unknown when it names none.
Collective collective_of_text(std::string_view text);

}  // namespace bubblesim::traces
