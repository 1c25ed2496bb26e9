// Kineto trace import: the real traces against an independent count, exact attribution on a
// synthetic trace, labels, NCCL names and the errors of bad input.
#include "traces/kineto_trace.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>

#include <rapidjson/document.h>
#include <zlib.h>
#include <filesystem>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/cli/cli.h"
#include "traces/nccl.h"

namespace bubblesim::traces {
namespace {

const std::string kTraces = BUBBLESIM_SHARED_DATA "/traces/";

// The real traces live beside the checkout (../shared/data); a checkout without them skips
// these tests, saying where it looked.
#define REQUIRE_REAL_TRACES() \
  if (!std::filesystem::exists(kTraces)) GTEST_SKIP() << "no real traces at " << kTraces

using bubblesim::testing::temp_path;

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(f, buffer, sizeof buffer)) > 0;)
    text.append(buffer, n);
  gzclose(f);
  return text;
}

void write_file(const std::string& path, const std::string& text, bool gzip = false) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << text;
  }
}

Profile import(const std::vector<std::string>& paths) {
  return import_kineto_traces(paths, PipeliningLabeller());
}

// The counts of a real trace computed here with a DOM, straight from the definitions: kernels
// are "cat": "kernel"; an NCCL kernel's collective is its "Collective name", else the nccl:*
// annotation of its launching process enclosing its launch (found by a plain scan), else its
// name.
struct Independent {
  std::size_t kernels = 0, memcpys = 0;
  long long kernel_ns = 0;
  std::map<Collective, int> nccl;
};

Independent count_independently(const std::string& path) {
  rapidjson::Document doc;
  const std::string text = read_gz(path);
  doc.Parse(text.c_str(), text.size());
  EXPECT_FALSE(doc.HasParseError());
  const auto& events = doc["traceEvents"].GetArray();
  std::map<long long, const rapidjson::Value*> runtime_by_correlation;
  std::vector<const rapidjson::Value*> annotations;
  for (const auto& e : events) {
    if (!e.HasMember("cat")) continue;
    const std::string cat = e["cat"].GetString();
    if (cat == "cuda_runtime" && e["args"].HasMember("correlation")) {
      runtime_by_correlation[e["args"]["correlation"].GetInt64()] = &e;
    }
    if (cat == "user_annotation" && std::string(e["name"].GetString()).rfind("nccl:", 0) == 0) {
      annotations.push_back(&e);
    }
  }
  const std::map<std::string, Collective> kByText = {
      {"allreduce", Collective::AllReduce},       {"broadcast", Collective::Broadcast},
      {"nccl:all_reduce", Collective::AllReduce}, {"nccl:broadcast", Collective::Broadcast},
      {"nccl:all_to_all", Collective::AllToAll},  {"nccl:_all_gather_base", Collective::AllGather},
  };
  Independent r;
  for (const auto& e : events) {
    if (!e.HasMember("cat")) continue;
    const std::string cat = e["cat"].GetString();
    if (cat == "gpu_memcpy") ++r.memcpys;
    if (cat != "kernel") continue;
    ++r.kernels;
    r.kernel_ns += std::llround(e["dur"].GetDouble() * 1000);
    const std::string name = e["name"].GetString();
    if (name.rfind("ncclKernel_", 0) != 0) continue;
    const auto& args = e["args"];
    std::string text;
    if (args.HasMember("Collective name")) {
      text = args["Collective name"].GetString();
    } else {
      const rapidjson::Value& launch = *runtime_by_correlation.at(args["correlation"].GetInt64());
      const double t = launch["ts"].GetDouble();
      double best_start = -1;
      for (const rapidjson::Value* a : annotations) {
        const double start = (*a)["ts"].GetDouble(), end = start + (*a)["dur"].GetDouble();
        if ((*a)["pid"] == launch["pid"] && start <= t && t <= end && start > best_start) {
          best_start = start;
          text = (*a)["name"].GetString();
        }
      }
    }
    EXPECT_TRUE(kByText.count(text)) << name << " under '" << text << "'";
    if (kByText.count(text)) ++r.nccl[kByText.at(text)];
  }
  return r;
}

void expect_matches_independent_count(const std::string& file, std::size_t kernels) {
  const Independent expected = count_independently(kTraces + file);
  EXPECT_EQ(expected.kernels, kernels);  // the README's figure, as a check on the check
  const Profile p = import({kTraces + file});
  EXPECT_EQ(p.kernels, expected.kernels);
  EXPECT_EQ(p.memcpys, expected.memcpys);
  EXPECT_EQ(p.total_kernel_ns, expected.kernel_ns);
  std::map<Collective, int> nccl;
  for (const CommSample& c : p.comms)
    ++nccl[c.collective];
  EXPECT_EQ(nccl, expected.nccl);
  EXPECT_FALSE(expected.nccl.empty());
}

TEST(KinetoTrace, DdpTraceMatchesAnIndependentCount) {
  REQUIRE_REAL_TRACES();
  expect_matches_independent_count("kineto_ddp_nccl_2ranks_rank0.json.gz", 2700);
  const Profile p = import({kTraces + "kineto_ddp_nccl_2ranks_rank0.json.gz"});
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(p.devices[0].kernels, 2700u);
  // All-reduce of 6,637,568 floats: the metadata gives the size.
  bool found = false;
  for (const CommSample& c : p.comms) {
    if (c.collective == Collective::AllReduce && c.duration_ns == 2636669) {
      EXPECT_EQ(c.in_bytes, 6637568 * 4);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(KinetoTrace, RecommendationTraceMatchesAnIndependentCount) {
  REQUIRE_REAL_TRACES();
  expect_matches_independent_count("kineto_sampled_128ranks_rank0.json.gz", 1154);
}

TEST(KinetoTrace, SeveralTracesAddUp) {
  REQUIRE_REAL_TRACES();
  const Profile p = import({kTraces + "kineto_ddp_nccl_2ranks_rank0.json.gz",
                            kTraces + "kineto_sampled_128ranks_rank0.json.gz"});
  EXPECT_EQ(p.kernels, 2700u + 1154u);
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[1].trace, 1);
}

// Process 100: the main thread (tid 1) labels the passes; the autograd thread (tid 2)
// launches one backward kernel inside PP:0I0. GPU 0 is pid 0. Times in us.
const char* kSynthetic = R"json({"deviceProperties": [{"id": 0, "name": "Test GPU"}],
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "PP:0F0", "pid": 100, "tid": 1, "ts": 1000, "dur": 1000},
  {"ph": "X", "cat": "user_annotation", "name": "PP:0I0", "pid": 100, "tid": 1, "ts": 3000, "dur": 1000},
  {"ph": "X", "cat": "user_annotation", "name": "inner", "pid": 100, "tid": 1, "ts": 3100, "dur": 100},
  {"ph": "X", "cat": "user_annotation", "name": "PP:0W0", "pid": 100, "tid": 1, "ts": 5000, "dur": 500},
  {"ph": "X", "cat": "user_annotation", "name": "PP:1F0", "pid": 100, "tid": 1, "ts": 5100, "dur": 100},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 1100, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 1200, "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 3150, "dur": 5, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 2, "ts": 3500, "dur": 5, "args": {"correlation": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 2, "ts": 3600, "dur": 5, "args": {"correlation": 5}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 5050, "dur": 5, "args": {"correlation": 6}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 5150, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": 9000, "dur": 5, "args": {"correlation": 8}},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_gather", "pid": 100, "tid": 3, "ts": 8000, "dur": 50},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 100, "tid": 3, "ts": 8010, "dur": 5, "args": {"correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "fwd_a", "pid": 0, "tid": 7, "ts": 1500.5, "dur": 100.25, "args": {"device": 0, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "fwd_b", "pid": 0, "tid": 7, "ts": 1700, "dur": 50.001, "args": {"device": 0, "correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "bwd_in_inner", "pid": 0, "tid": 7, "ts": 3300, "dur": 10, "args": {"device": 0, "correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "bwd_from_autograd", "pid": 0, "tid": 7, "ts": 3800, "dur": 400, "args": {"device": 0, "correlation": 4}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "pid": 0, "tid": 7, "ts": 4300, "dur": 20, "args": {"device": 0, "correlation": 5, "bytes": 64}},
  {"ph": "X", "cat": "kernel", "name": "wgrad", "pid": 0, "tid": 7, "ts": 5300, "dur": 30, "args": {"device": 0, "correlation": 6}},
  {"ph": "X", "cat": "kernel", "name": "stage1_fwd", "pid": 0, "tid": 7, "ts": 5400, "dur": 40, "args": {"device": 0, "correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "outside", "pid": 0, "tid": 7, "ts": 9100, "dur": 7, "args": {"device": 0, "correlation": 8}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "PP:2F5", "pid": 0, "tid": 7, "ts": 9500, "dur": 100},
  {"ph": "X", "cat": "kernel", "name": "no_launch", "pid": 0, "tid": 7, "ts": 9510, "dur": 60, "args": {"device": 0}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20, "ts": 8100, "dur": 200, "args": {"device": 0, "correlation": 9, "In msg nelems": 1000, "Out msg nelems": 8000, "dtype": "BFloat16"}},
  {"ph": "i", "cat": "kernel", "name": "instant, ignored", "pid": 0, "tid": 7, "ts": 1},
  {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}}
 ]})json";

void expect_synthetic_attribution(const Profile& p) {
  ASSERT_EQ(p.passes.size(), 5u);
  struct Expected {
    RangeLabel label;
    sim::TimeNs start_ns, end_ns, kernel_ns;
    std::uint32_t ops;
  };
  const Expected expected[] = {
      // fwd_a (1500.5 + 100.25 us) and fwd_b: exact nanoseconds from the decimals.
      {{sim::OpKind::F, 0, 0}, 1500500, 1750001, 100250 + 50001, 2},
      // The autograd thread's kernel and memcpy, in PP:0I0 of the main thread; the kernel
      // launched in "inner" too (an unlabelled range does not hide its labelled parent).
      {{sim::OpKind::B, 0, 0}, 3300000, 4320000, 10000 + 400000 + 20000, 3},
      // Launched at 5050 us: only PP:0W0 encloses it.
      {{sim::OpKind::W, 0, 0}, 5300000, 5330000, 30000, 1},
      // Launched at 5150 us inside PP:1F0, itself inside PP:0W0: the innermost wins.
      {{sim::OpKind::F, 1, 0}, 5400000, 5440000, 40000, 1},
      // No launch event: the GPU range on its device.
      {{sim::OpKind::F, 2, 5}, 9510000, 9570000, 60000, 1},
  };
  for (std::size_t i = 0; i < 5; ++i) {
    const PassSample& s = p.passes[i];
    EXPECT_EQ(s.label, expected[i].label) << i;
    EXPECT_EQ(s.gpu_start_ns, expected[i].start_ns) << i;
    EXPECT_EQ(s.gpu_end_ns, expected[i].end_ns) << i;
    EXPECT_EQ(s.kernel_ns, expected[i].kernel_ns) << i;
    EXPECT_EQ(s.gpu_ops, expected[i].ops) << i;
  }
  EXPECT_EQ(p.passes[0].process, 100);
  EXPECT_EQ(p.kernels, 9u);
  EXPECT_EQ(p.memcpys, 1u);
  EXPECT_EQ(p.unattributed_gpu_ops, 1u);  // "outside"
  ASSERT_EQ(p.comms.size(), 1u);
  EXPECT_EQ(p.comms[0].collective, Collective::AllGather);  // from its nccl: annotation
  EXPECT_EQ(p.comms[0].in_bytes, 2000);
  EXPECT_EQ(p.comms[0].out_bytes, 16000);
  EXPECT_EQ(p.comms[0].duration_ns, 200000);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "Test GPU");
}

TEST(KinetoTrace, SyntheticTraceIsAttributedExactly) {
  write_file(temp_path("synthetic.json"), kSynthetic);
  expect_synthetic_attribution(import({temp_path("synthetic.json")}));
}

TEST(KinetoTrace, GzipAndPlainReadTheSame) {
  write_file(temp_path("synthetic.json.gz"), kSynthetic, true);
  expect_synthetic_attribution(import({temp_path("synthetic.json.gz")}));
}

TEST(KinetoTrace, StatisticsPerStageAndPass) {
  write_file(temp_path("synthetic.json"), kSynthetic);
  const std::vector<PassStats> stats = pass_stats(import({temp_path("synthetic.json")}));
  ASSERT_EQ(stats.size(), 5u);  // 0F, 0B, 0W, 1F, 2F
  EXPECT_EQ(stats[0].stage, 0);
  EXPECT_EQ(stats[0].pass, sim::OpKind::F);
  EXPECT_EQ(stats[0].kernel.count, 1u);
  EXPECT_DOUBLE_EQ(stats[0].kernel.median_ms, 0.150251);
  EXPECT_DOUBLE_EQ(stats[0].span.median_ms, 0.249501);
  EXPECT_EQ(stats[1].pass, sim::OpKind::B);
  EXPECT_DOUBLE_EQ(stats[1].kernel.total_ms, 0.43);
  EXPECT_EQ(stats[4].stage, 2);
}

TEST(KinetoTrace, QuantilesInterpolateLinearly) {
  const DurationStats s = duration_stats({4000000, 1000000, 3000000, 2000000});
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.total_ms, 10);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.p10_ms, 1.3);
  EXPECT_DOUBLE_EQ(s.p90_ms, 3.7);
}

TEST(Labels, PipeliningLabelsUsePyTorchsLetters) {
  const PipeliningLabeller l;
  EXPECT_EQ(l.label("PP:0F3"), (RangeLabel{sim::OpKind::F, 0, 3}));
  EXPECT_EQ(l.label("PP:12I7"), (RangeLabel{sim::OpKind::B, 12, 7}));
  EXPECT_EQ(l.label("PP:2W1"), (RangeLabel{sim::OpKind::W, 2, 1}));
  EXPECT_EQ(l.label("PP:2B1"), (RangeLabel{sim::OpKind::BW, 2, 1}));
  // Under emit_nvtx, PyTorch 2.11 appends its fields (seen on an H200: tests/profiler/data).
  EXPECT_EQ(l.label("PP:0F0, op_id = 114"), (RangeLabel{sim::OpKind::F, 0, 0}));
  EXPECT_EQ(l.label("PP:1I3, seq = 5, op_id = 7"), (RangeLabel{sim::OpKind::B, 1, 3}));
  for (const char* other : {"PP:0SEND_F3", "PP:0F", "PP:F3", "PP:0F3x", "0F3", "## forward ##",
                            "PP:0F3,op_id = 1", "PP:0F3 , op_id = 1", "PP:0UNSHARD, op_id = 9"}) {
    EXPECT_FALSE(l.label(other)) << other;
  }
}

TEST(Labels, RegexNamedGroupsBecomeNumberedOnes) {
  const RegexLabeller paper(R"((?<name>.*)\((?<pass>[FBW])\))");
  EXPECT_EQ(paper.label("block(3)(B)"), (RangeLabel{sim::OpKind::B}));
  EXPECT_FALSE(paper.label("block"));
  // A non-capturing group, an escaped parenthesis and one in a class do not count.
  const RegexLabeller full(
      R"((?:x|y)\(?[(]?s(?<stage>\d+)_(?<pass>F|BW|I)(_c(?<chunk>\d))?_mb(?<microbatch>\d+))");
  EXPECT_EQ(full.label("xs3_BW_c1_mb12"), (RangeLabel{sim::OpKind::BW, 3, 12, 1}));
  EXPECT_EQ(full.label("y((s0_I_mb2"), (RangeLabel{sim::OpKind::B, 0, 2}));
  EXPECT_THROW(RegexLabeller("(?<stage>\\d+)"), InvalidArgument);  // no pass
  EXPECT_THROW(RegexLabeller("(?<pass>[FB]"), InvalidArgument);    // not a regex
  EXPECT_THROW(RegexLabeller("(?<pass>.)(?<pass>.)"), InvalidArgument);
  EXPECT_THROW(RegexLabeller("(?<pass>.*)").label("fwd"), InvalidArgument);
  // The words of whole-step annotations ("## forward ##", "## backward ##").
  EXPECT_EQ(RegexLabeller("## (?<pass>\\w+) ##").label("## forward ##"),
            (RangeLabel{sim::OpKind::F}));
  EXPECT_EQ(RegexLabeller("## (?<pass>\\w+) ##").label("## backward ##"),
            (RangeLabel{sim::OpKind::BW}));
}

TEST(Nccl, KernelNamesOfEveryVersion) {
  const std::pair<const char*, Collective> names[] = {
      {"ncclAllReduceRingLLKernel_sum_f32", Collective::AllReduce},
      {"ncclBroadcastRingLLKernel_copy_i8", Collective::Broadcast},
      {"ncclSendRecvKernel_copy_i8", Collective::SendRecv},
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
       Collective::AllReduce},
      {"ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16", Collective::ReduceScatter},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", Collective::SendRecv},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Collective::AllGather},
      {"ncclDevKernel_Reduce_Sum_f32_RING_LL", Collective::Reduce},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", Collective::SendRecv},
      {"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", Collective::Unknown},
      {"ncclSymDevKernel_AllReduce_AGxLL_R_sum_f32", Collective::AllReduce},
      {"ncclSymDevKernel_AllGather_LL", Collective::AllGather},
  };
  for (const auto& [name, collective] : names) {
    EXPECT_TRUE(is_nccl_kernel(name)) << name;
    EXPECT_EQ(collective_of_kernel(name), collective) << name;
  }
  for (const char* other : {"void at::native::vectorized_elementwise_kernel<4>", "ncclGetVersion",
                            "ncclKernelLaunch", "nccl_helper_Kernel_x"}) {
    EXPECT_FALSE(is_nccl_kernel(other)) << other;
  }
  EXPECT_EQ(collective_of_text("nccl:all_to_all"), Collective::AllToAll);
  EXPECT_EQ(collective_of_text("_allgather_base"), Collective::AllGather);
  EXPECT_EQ(collective_of_text("reduce_scatter_tensor_coalesced"), Collective::ReduceScatter);
  EXPECT_EQ(collective_of_text("all_to_allv"), Collective::AllToAll);
  EXPECT_EQ(collective_of_text("recv"), Collective::SendRecv);
  EXPECT_EQ(collective_of_text("barrier"), Collective::Unknown);
}

// The error names the file and the byte offset.
void expect_error(const std::string& text, const std::string& needle, bool gzip = false) {
  const std::string path = temp_path(gzip ? "bad.json.gz" : "bad.json");
  write_file(path, text, gzip);
  try {
    import({path});
    FAIL() << "expected an error containing '" << needle << "' for: " << text;
  } catch (const TraceFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(path + ": byte ", 0), 0u) << e.what();
  }
}

TEST(KinetoTrace, BadInputGetsNamedErrorsWithTheByteOffset) {
  // Truncated: the offset is the end of the input.
  expect_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel")", "byte 44: not valid JSON");
  expect_error("not json", "byte 1: not valid JSON");
  expect_error(R"({"traceEvents": [{"ph": "X"}] } x)", "byte 32: not valid JSON");
  expect_error(R"({"traceEvents": 5})", "byte 16: \"traceEvents\" must be an array");
  expect_error(R"({"traceEvents": {"ph": "X"}})", "\"traceEvents\" must be an array");
  expect_error(R"({"traceEvents": [1, 2]})", "byte 17: expected an event object");
  expect_error(R"({"displayTimeUnit": "ms"})", "no \"traceEvents\" array");
  expect_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]})",
               "event 0 ('k') has no \"ts\" or no \"dur\"");
  expect_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "1", "dur": 1}]})",
               "\"ts\" and \"dur\" must be numbers");
  // gzip: offsets count decompressed bytes.
  expect_error(R"({"traceEvents": [{"ph": "X", "cat": "kernel")",
               "byte 44 of the decompressed stream: not valid JSON", true);
  const std::string gz = temp_path("whole.json.gz");
  write_file(gz, kSynthetic, true);
  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string truncated = temp_path("truncated.json.gz");
  write_file(truncated, bytes.substr(0, bytes.size() / 2));
  try {
    import({truncated});
    FAIL();
  } catch (const TraceFormatError& e) {
    EXPECT_NE(
        std::string(e.what()).find("of the decompressed stream: the gzip stream is truncated"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(import({temp_path("does-not-exist.json")}), TraceFormatError);
}

TEST(KinetoTrace, AByteOrderMarkIsSkippedAndCounted) {
  // RFC 8259 lets a parser ignore a UTF-8 byte order mark; plain and gzip alike.
  const std::string bom = "\xEF\xBB\xBF";
  write_file(temp_path("bom.json"), bom + kSynthetic);
  expect_synthetic_attribution(import({temp_path("bom.json")}));
  write_file(temp_path("bom.json.gz"), bom + kSynthetic, true);
  expect_synthetic_attribution(import({temp_path("bom.json.gz")}));
  // Offsets in errors (from 0) count it: "x" is at byte 3.
  expect_error(bom + "x", "byte 3: not valid JSON");
}

TEST(KinetoTrace, ImportCommandTakesALabelRegex) {
  const std::string path = temp_path("regex.json");
  write_file(path, R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "block(W)", "pid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "ts": 1, "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "ts": 20, "dur": 3, "args": {"correlation": 5}}]})json");
  std::ostringstream out, err;
  ASSERT_EQ(
      cli::run({"import", path, "--json", "--label-regex", R"((?<name>.*)\((?<pass>[FBW])\))"}, out,
               err),
      0)
      << err.str();
  EXPECT_NE(out.str().find(R"("stage": null)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(R"("pass": "W")"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(R"("total_kernel_ms": 0.003)"), std::string::npos) << out.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(cli::run({"import", path, "--label-regex", "(?<stage>\\d+)"}, out2, err2), 2);
  EXPECT_EQ(out2.str(), "");
  EXPECT_NE(err2.str().find("option --label-regex: '(?<stage>\\d+)' has no (?<pass>...) group"),
            std::string::npos)
      << err2.str();
}

TEST(KinetoTrace, BareArrayOfEventsAndOldCategoriesAreRead) {
  write_file(temp_path("array.json"), R"([
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "ts": 1, "dur": 2.5},
    {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "ts": 5, "dur": 0.0004},
    {"ph": "X", "cat": "Memcpy", "name": "m", "pid": 0, "ts": 9, "dur": 1}])");
  const Profile p = import({temp_path("array.json")});
  EXPECT_EQ(p.kernels, 2u);
  EXPECT_EQ(p.memcpys, 1u);
  EXPECT_EQ(p.total_kernel_ns, 2500);  // 0.4 ns rounds to 0
}

}  // namespace
}  // namespace bubblesim::traces
