// The profiler's output file: Chrome-trace JSON that the Kineto importer
// (traces/kineto_trace.h, `bubblesim import`) reads, plus a header object. docs/profiler.md
// lists the fields. In short:
//   "bubblesim_profiler": header (versions, devices, rank, pid, host, clocks, counters)
//   "deviceProperties":   [{"id", "name"}] per device
//   "traceEvents":        complete ("X") events:
//     user_annotation   one per labelled NVTX range (pid = process, tid = opening thread)
//     cuda_runtime      one per launch callback ("cuLaunchKernel", "cudaMemcpy", "cudaMemset",
//                       "cudaGraphLaunch"; zero duration at the launch time), args.correlation
//     kernel            one per kernel: demangled name, pid = device, tid = stream,
//                       args.correlation/device/stream/grid/block; NCCL kernels also carry
//                       "Collective name", "In msg nelems" with "dtype": "Byte" (bytes of the
//                       NCCL calls they ran), "peers" and "nccl_calls"
//     gpu_memcpy/gpu_memset  one per memcpy/memset, args.bytes
// Times are microseconds written with three decimals: exact nanoseconds.
#pragma once

#include <ostream>
#include <string>

#include "profiler/capture.h"
#include "sim/error.h"

namespace bubblesim::profiler {

// The demangled form of a kernel name; the name itself when it is not a mangled C++ name.
std::string demangle(const std::string& name);

void write_chrome_trace(const Capture& capture, std::ostream& out);

// "bubblesim-profile.rank<RANK>.pid<PID>.json" ("rank-" for no rank).
std::string profile_file_name(const CaptureHeader& header);

// Writes `path` whole: into "<path>.tmp" first, renamed over `path` once complete, so a reader
// never sees a half-written file. Throws Error naming the path when it cannot be written.
void write_chrome_trace_file(const Capture& capture, const std::string& path);

}  // namespace bubblesim::profiler
