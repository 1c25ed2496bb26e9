// Import of PyTorch profiler (Kineto) traces: Chrome-trace JSON, plain or gzip-compressed.
//
// Streaming: the file is inflated through zlib (gzread reads plain files as they are) into a
// RapidJSON SAX reader; neither the JSON text nor a DOM is held. What is kept is one compact
// record per event that matters: GPU ops (kernels, memcpys, memsets), CPU launch calls
// (`cuda_runtime`/`cuda_driver` events named *Launch*, *Memcpy*, *Memset*; PyTorch 1.8's
// categories Kernel, Memcpy, Memset and Runtime are read too), labelled ranges
// and `nccl:*` annotations; memory grows with those, not with the file's size. Both
// {"traceEvents": [...]} and a bare array of events are read; only complete ("ph": "X")
// events count.
//
// Attribution rule. A GPU op belongs to the *innermost labelled range of its launching
// process that encloses its launch*: the CPU event with the same args.correlation gives the
// launch time and process; among the `user_annotation` ranges of that process, on every
// thread (PyTorch launches backward kernels from autograd threads), whose names the labeller
// accepts and that contain the launch time (ends inclusive), the one that starts last wins.
// A GPU op without a launch event, or whose launch is in no labelled range, falls back to the
// `gpu_user_annotation` ranges on its own device (same pid) that contain its start, by the
// same rule. A range to which no GPU op belongs is no sample, except in a trace without any GPU
// op (a pipeline recorded on CPU, e.g. PiPPy over gloo): there every labelled range is a sample
// timed by its own start and duration (PassSample::gpu_ops = 0). NCCL kernels are not compute:
// they become CommSamples, never part of a pass sample.
//
// Iterations: every `user_annotation` range whose whole name matches the iteration pattern
// (by default PyTorch's optimizer step, "Optimizer.step#SGD.step") is a boundary at its start;
// a sample's iteration (PassSample::iteration) counts the boundaries of its trace at or before
// the start of its range, renumbered 0, 1, ... over the iterations that hold samples.
//
// An NCCL kernel's collective is, in order of preference: its "Collective name" argument, the
// innermost `nccl:*` annotation (same process, all threads) enclosing its launch, its name
// (nccl.h). Its sizes come from "In msg nelems"/"Out msg nelems" and "dtype".
//
// Traces written by bubblesim's Perfetto export (perfetto_export.h) are read back exactly:
// each `bubblesim_op` event is one pass sample whose kernel time and span are its duration.
//
// Times: "ts" and "dur" are microseconds (decimals allowed); they are converted to integer
// nanoseconds from their decimal digits, without rounding through floating point.
#pragma once

#include <string>
#include <vector>

#include "sim/error.h"
#include "traces/labels.h"
#include "traces/profile.h"

namespace bubblesim::traces {

// A trace that cannot be read: what() is one line naming the file, the byte offset where
// reading stopped and what was expected, e.g. "t.json.gz: byte 1234 of the decompressed
// stream: expected ..." (for a gzip file the offset counts decompressed bytes; for a plain
// file, bytes of the file). Also thrown for a file that cannot be opened.
class TraceFormatError : public Error {
 public:
  using Error::Error;
};

// The default iteration pattern: PyTorch profiler's optimizer step ranges.
inline constexpr const char* kOptimizerStepPattern = R"(Optimizer\.step#.*)";

// Imports the traces at `paths` (trace i's samples carry trace = i) into one profile, split
// into iterations at the ranges matching `iteration_pattern` (ECMAScript).
// Throws TraceFormatError; InvalidArgument from a RegexLabeller, or naming --iteration-regex
// for an invalid `iteration_pattern`.
Profile import_kineto_traces(const std::vector<std::string>& paths, const RangeLabeller& labeller,
                             const std::string& iteration_pattern = kOptimizerStepPattern);

}  // namespace bubblesim::traces
