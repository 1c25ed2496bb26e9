// Files the CUPTI profiler (libbubblesim_cupti.so) wrote on a real GPU, imported by
// `bubblesim import`'s reader and checked against counts taken straight from the JSON.
//
// tests/profiler/data/ (recorded 2026-11-27 on one NVIDIA H200, driver 580.159.04, CUDA 13.0,
// through the device machine; docs/profiler.md has the whole run):
//  - h200_workload.json.gz: `bubblesim-workload --layers 2 --hidden 1024 --seq 512
//    --microbatches 4 --steps 5 --warmup 2` (cuBLAS GEMMs, NVTX ranges PP:0F<mb>, PP:0I<mb>,
//    PP:0W<mb> from one thread);
//  - h200_torch.json.gz: a PyTorch 2.11 script (4 bf16 Linear layers, 4 microbatches, 6 steps)
//    with ranges PP:0F<mb> and PP:0B<mb> (full backward) pushed by torch.cuda.nvtx on the
//    main thread, while autograd launches the backward kernels from a thread of its own;
//  - h200_torch_zero_bubble.json.gz: torch.distributed.pipelining's ScheduleInterleavedZeroBubble
//    (PyTorch 2.11, torchrun with one rank holding stages 0 and 1, 4 microbatches, 3 steps) under
//    emit_nvtx, which names its ranges "PP:0F0, op_id = 114"; stage 0's input gradients (I)
//    compute nothing and launch no GPU work.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "traces/kineto_trace.h"
#include "traces/replay.h"

namespace bubblesim::traces {
namespace {

const std::string kData = BUBBLESIM_SOURCE_DIR "/tests/profiler/data/";

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::string text;
  char buffer[1 << 16];
  for (int n; f != nullptr && (n = gzread(f, buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  if (f != nullptr) gzclose(f);
  return text;
}

// What the file says, read with a DOM from the writer's format (docs/profiler.md).
struct Counted {
  std::size_t kernels = 0, header_kernels = 0;
  long long kernel_ns = 0;
  std::map<std::string, int> ranges;  // by "PP:0F" etc.: the name less its microbatch
  std::string device_name;
  int launch_threads = 0;  // threads that launched kernels
  int range_threads = 0;   // threads that opened the PP: ranges
};

Counted count(const std::string& path) {
  const std::string text = read_gz(path);
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << path;
  Counted c;
  const auto& header = doc["bubblesim_profiler"];
  EXPECT_STREQ(header["status"].GetString(), "ok");
  c.header_kernels = header["counters"]["kernels"].GetUint64();
  if (!header["devices"].Empty()) c.device_name = header["devices"][0]["name"].GetString();
  std::set<long long> kernel_correlations;
  for (const auto& e : doc["traceEvents"].GetArray()) {
    if (std::string(e["cat"].GetString()) != "kernel") continue;
    ++c.kernels;
    c.kernel_ns += std::llround(e["dur"].GetDouble() * 1000);
    kernel_correlations.insert(e["args"]["correlation"].GetInt64());
  }
  std::set<long long> launch_threads, range_threads;
  for (const auto& e : doc["traceEvents"].GetArray()) {
    const std::string cat = e["cat"].GetString();
    if (cat == "cuda_runtime" && kernel_correlations.count(e["args"]["correlation"].GetInt64())) {
      launch_threads.insert(e["tid"].GetInt64());
    } else if (cat == "user_annotation") {
      const std::string name = e["name"].GetString();
      if (name.rfind("PP:", 0) != 0) continue;
      ++c.ranges[name.substr(0, 5)];
      range_threads.insert(e["tid"].GetInt64());
    }
  }
  c.launch_threads = static_cast<int>(launch_threads.size());
  c.range_threads = static_cast<int>(range_threads.size());
  return c;
}

std::map<std::string, int> passes_by_kind(const Profile& p) {
  std::map<std::string, int> out;
  for (const PassSample& s : p.passes) {
    EXPECT_GT(s.gpu_ops, 0u);  // every range ran GPU work
    EXPECT_LE(s.kernel_ns, s.span_ns() + 1);
    ++out[std::string(sim::to_string(s.label.pass))];
  }
  return out;
}

// Imports `path` and checks what the file and the import must agree on: the kernels and their
// time as the JSON has them, the library's own kernel counter, the one device and its name.
Profile import_checked(const std::string& path, const Counted& c) {
  EXPECT_EQ(c.kernels, c.header_kernels);  // the library's counter and its output agree
  EXPECT_EQ(c.device_name, "NVIDIA H200");
  const Profile p = import_kineto_traces({path}, PipeliningLabeller());
  EXPECT_EQ(p.kernels, c.kernels);
  EXPECT_EQ(p.total_kernel_ns, c.kernel_ns);
  EXPECT_EQ(p.devices.size(), 1u);
  for (const DeviceInfo& d : p.devices)
    EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_TRUE(p.comms.empty());  // one rank: NCCL ran no kernel
  return p;
}

TEST(ProfilerOnGpu, WorkloadProfileImportsToItsOwnCounts) {
  const std::string path = kData + "h200_workload.json.gz";
  const Counted c = count(path);
  // 7 steps (2 warm-up) x 4 microbatches of each pass, as the command ran them.
  EXPECT_EQ(c.ranges, (std::map<std::string, int>{{"PP:0F", 28}, {"PP:0I", 28}, {"PP:0W", 28}}));
  const Profile p = import_checked(path, c);
  EXPECT_EQ(passes_by_kind(p), (std::map<std::string, int>{{"B", 28}, {"F", 28}, {"W", 28}}));
}

// The profiler keeps only the labelled passes (no step ranges): the passes that come again
// split the 7 steps, each a complete one-device schedule of F, I and W for 4 microbatches. On
// one device the replay runs the passes back to back with their own durations, so it is the
// sum of the passes' spans, never longer than the measured step (which has launch gaps too).
TEST(ProfilerOnGpu, WorkloadProfileReplaysStepByStep) {
  const Profile p = import_kineto_traces({kData + "h200_workload.json.gz"}, PipeliningLabeller());
  const ReplayResult r = replay_profile(p);
  const std::vector<ExecutedIteration> steps = executed_iterations(p);
  EXPECT_TRUE(r.skipped.empty());
  ASSERT_EQ(r.iterations.size(), 7u);
  ASSERT_EQ(steps.size(), 7u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(i);
    const IterationReplay& it = r.iterations[i];
    ASSERT_EQ(it.schedule.device_ops.size(), 1u);
    EXPECT_EQ(it.schedule.device_ops[0].size(), 12u);
    EXPECT_EQ(it.schedule.num_microbatches, 4);
    sim::TimeNs spans = 0;
    for (const ExecutedPass& pass : steps[i].devices[0].passes)
      spans += pass.end_ns - pass.start_ns;
    EXPECT_EQ(it.replayed_ns, spans);
    EXPECT_EQ(it.measured_ns, steps[i].end_ns - steps[i].start_ns);
    EXPECT_LE(it.replayed_ns, it.measured_ns);
  }
}

// PyTorch's own zero-bubble schedule: the executed order of each step is the order its ranges
// began in (read from the JSON), stage 0's I's included as passes that took no time.
TEST(ProfilerOnGpu, PyTorchZeroBubbleScheduleReplaysInItsOwnOrder) {
  const std::string path = kData + "h200_torch_zero_bubble.json.gz";
  const std::string text = read_gz(path);
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  ASSERT_FALSE(doc.HasParseError());
  std::vector<std::pair<double, std::string>> begun;  // (start, "0F1"), the suffix cut
  for (const auto& e : doc["traceEvents"].GetArray()) {
    if (std::string(e["cat"].GetString()) != "user_annotation") continue;
    const std::string name = e["name"].GetString();
    ASSERT_NE(name.find(", op_id = "), std::string::npos) << name;
    begun.emplace_back(e["ts"].GetDouble(), name.substr(3, name.find(',') - 3));
  }
  std::sort(begun.begin(), begun.end());
  ASSERT_EQ(begun.size(), 72u);  // 3 steps x 2 stages x 4 microbatches x F, I, W

  // PyTorch's labels as they are, suffix and all (PipeliningLabeller, the default).
  const Profile p = import_kineto_traces({path}, PipeliningLabeller());
  EXPECT_EQ(p.empty_passes, 12u);  // stage 0's I, every step
  for (const PassSample& s : p.passes) {
    const bool empty = s.label.stage == 0 && s.label.pass == sim::OpKind::B;
    EXPECT_EQ(s.gpu_ops == 0, empty);
    if (empty) {
      EXPECT_EQ(s.kernel_ns, 0);
    }
  }
  const ReplayResult r = replay_profile(p);
  EXPECT_TRUE(r.skipped.empty());
  ASSERT_EQ(r.iterations.size(), 3u);
  std::size_t next = 0;
  for (const IterationReplay& it : r.iterations) {
    ASSERT_EQ(it.schedule.device_ops.size(), 1u);
    ASSERT_EQ(it.schedule.device_ops[0].size(), 24u);
    for (const sim::Op& op : it.schedule.device_ops[0]) {
      const char letter = op.kind == sim::OpKind::B ? 'I' : sim::to_string(op.kind)[0];
      EXPECT_EQ(std::to_string(op.stage) + letter + std::to_string(op.microbatch),
                begun[next++].second);
    }
  }
}

TEST(ProfilerOnGpu, AutogradThreadsKernelsGoToTheMainThreadsRanges) {
  const std::string path = kData + "h200_torch.json.gz";
  const Counted c = count(path);
  EXPECT_EQ(c.ranges, (std::map<std::string, int>{{"PP:0B", 24}, {"PP:0F", 24}}));
  EXPECT_EQ(c.range_threads, 1);   // the ranges: the main thread's
  EXPECT_EQ(c.launch_threads, 2);  // the kernels: the main thread's and autograd's
  const Profile p = import_checked(path, c);
  // Every backward range got the kernels autograd launched inside it, from its own thread.
  EXPECT_EQ(passes_by_kind(p), (std::map<std::string, int>{{"BW", 24}, {"F", 24}}));
}

}  // namespace
}  // namespace bubblesim::traces
