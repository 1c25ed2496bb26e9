// `bubblesim advise`: the top choice fits and is not dominated, the predictions agree with
// `simulate --model`, the search is deterministic, and a budget nothing fits in is an error.
#include "analysis/app/advise.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "sim/cli/commands.h"
#include "sim/schedules/builtin.h"
#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

namespace bubblesim::analysis::app {
namespace {

using cli::testing::parse_json;
using cli::testing::run_cli;

const std::string kModel = BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml";

AdviseSearch search_on(const std::string& gpu, int gpus, double budget_gb) {
  AdviseSearch s;
  s.model = models::load_transformer(kModel);
  s.hardware.gpu = models::find_gpu(gpu);
  s.hardware.gpus = gpus;
  s.hardware.memory_budget_bytes = budget_gb * 1e9;
  s.global_batch = 3 * gpus * s.model.microbatch_size;  // the command's default: 144 on 8
  s.microbatch_sizes = {1, 2, 3, 4, 6, 8};
  s.chunks = {1, 2};
  return s;
}

TEST(AdviseTest, TopChoiceFitsAndNoCandidateDominatesIt) {
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  // 20 GB on A100-40GB: the whole model (24 GB of static memory) fits on no single GPU, so
  // the answer has to be a pipeline.
  const AdviseSearch search = search_on("A100-40GB", 8, 20);
  const std::vector<AdviseCandidate> ranked = advise(search, registry, 2);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked.size(), advise_candidates(search, registry).size());
  const AdviseCandidate& top = ranked.front();
  ASSERT_EQ(top.outcome, AdviseOutcome::kFits);
  EXPECT_LE(top.peak_memory_bytes, 20e9);
  EXPECT_GT(top.pp, 1);
  std::size_t oom = 0;
  for (const AdviseCandidate& c : ranked) {
    if (c.outcome == AdviseOutcome::kOutOfMemory) {
      ++oom;
      EXPECT_GT(c.peak_memory_bytes, 20e9) << c.label();
    }
    if (c.outcome != AdviseOutcome::kFits) continue;
    EXPECT_LE(c.peak_memory_bytes, 20e9) << c.label();
    EXPECT_LE(c.samples_per_gpu_per_s, top.samples_per_gpu_per_s) << c.label();
    const bool dominates = c.samples_per_gpu_per_s >= top.samples_per_gpu_per_s &&
                           c.peak_memory_bytes <= top.peak_memory_bytes &&
                           (c.samples_per_gpu_per_s > top.samples_per_gpu_per_s ||
                            c.peak_memory_bytes < top.peak_memory_bytes);
    EXPECT_FALSE(dominates) << c.label() << " dominates " << top.label();
    // Throughput is the global batch over N GPUs and the iteration with its all-reduce.
    EXPECT_NEAR(c.samples_per_gpu_per_s, 144.0 / (8 * (c.iteration_time_ms + c.allreduce_ms) / 1e3),
                1e-9);
    EXPECT_EQ(c.microbatches * c.microbatch_size * c.dp, 144) << c.label();
    EXPECT_EQ(c.pp * c.dp, 8) << c.label();
  }
  EXPECT_GT(oom, 0u);
}

TEST(AdviseTest, PredictionsMatchSimulateWithTheModel) {
  // zb-h1 at p = 8, b = 6 is the paper's setup: m = 144 / 6 = 24. A hop moves 2sbh bytes.
  const sim::ScheduleRegistry registry = sim::builtin_schedules();
  AdviseSearch search = search_on("A100-80GB", 8, 80);
  search.microbatch_sizes = {6};
  search.schedules = {"zb-h1"};
  const std::vector<AdviseCandidate> ranked = advise(search, registry, 1);
  const auto it = std::find_if(ranked.begin(), ranked.end(),
                               [](const AdviseCandidate& c) { return c.pp == 8; });
  ASSERT_NE(it, ranked.end());
  EXPECT_EQ(it->microbatches, 24);
  EXPECT_EQ(it->allreduce_ms, 0);
  const double comm_ms = 0.01 + 2.0 * 1024 * 6 * 2304 / 50e9 * 1e3;
  const auto r = run_cli({"simulate", "-s", "zb-h1", "-p", "8", "-m", "24", "--model", kModel,
                          "--comm", fmt::format("{}", comm_ms), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const rapidjson::Document doc = parse_json(r.out);
  EXPECT_NEAR(it->iteration_time_ms, doc["iteration_time_ms"].GetDouble(), 1e-6);
  EXPECT_NEAR(it->bubble_rate, doc["bubble_rate"].GetDouble(), 1e-12);
  EXPECT_DOUBLE_EQ(it->peak_memory_bytes, doc["peak_memory_bytes"].GetDouble());
  EXPECT_NEAR(it->samples_per_gpu_per_s, doc["samples_per_gpu_per_s"].GetDouble(), 1e-9);
}

TEST(AdviseTest, OutputIsTheSameOnOneThreadAndOnMany) {
  const auto one = run_cli({"advise", "--model", kModel, "--gpus", "4", "--gpu", "A100-40GB", "-j",
                            "1", "--progress", "none"});
  const auto many = run_cli({"advise", "--model", kModel, "--gpus", "4", "--gpu", "A100-40GB", "-j",
                             "3", "--progress", "none"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out, many.out);
  EXPECT_NE(one.out.find("top 5 that fit:"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("why the others lost"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("gpipe"), std::string::npos) << one.out;
}

// --cluster is the same search as the options it stands for: the device count, the slowest
// device with the smallest memory, and the link between nodes.
TEST(AdviseTest, ClusterStandsForItsSlowestGpuAndItsLinkBetweenNodes) {
  const std::string cluster = bubblesim::testing::temp_path("advise_cluster.yaml");
  std::ofstream(cluster)
      << "name: two-kinds\nnodes:\n"
         "  - {count: 1, gpus_per_node: 4, gpu: H100-SXM}\n"
         "  - {count: 1, gpus_per_node: 4, gpu: A100-40GB}\n"
         "links:\n"
         "  intra_node: {type: nvlink, bandwidth_gb_per_s: 300, latency_us: 3}\n"
         "  inter_node: {type: infiniband, bandwidth_gb_per_s: 25, latency_us: 7}\n";
  const auto from_cluster = run_cli({"advise", "--model", kModel, "--cluster", cluster,
                                     "--schedules", "1f1b,zb-h1", "--progress", "none"});
  std::remove(cluster.c_str());
  ASSERT_EQ(from_cluster.status, 0) << from_cluster.err;
  EXPECT_NE(from_cluster.out.find("on cluster two-kinds as 8 x A100-40GB (40.00 GB budget"),
            std::string::npos)
      << from_cluster.out;
  const auto by_hand = run_cli({"advise", "--model", kModel, "--gpu", "A100-40GB", "--gpus", "8",
                                "--link-gbps", "25", "--link-latency-ms", "0.007", "--schedules",
                                "1f1b,zb-h1", "--progress", "none"});
  ASSERT_EQ(by_hand.status, 0) << by_hand.err;
  const auto body = [](const std::string& text) { return text.substr(text.find('\n')); };
  EXPECT_EQ(body(from_cluster.out), body(by_hand.out));

  // A slowed device is the slowest: the shipped mixed example's A100 at 1.2 times the time.
  const auto mixed = run_cli({"advise", "--model", kModel, "--cluster",
                              BUBBLESIM_SOURCE_DIR "/models/examples/mixed-a100-h100.yaml",
                              "--schedules", "1f1b", "--progress", "none"});
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("8 x A100-80GB slowed x1.2 (80.00 GB budget"), std::string::npos)
      << mixed.out;
  const auto both = run_cli({"advise", "--model", kModel, "--cluster", cluster, "--gpus", "4"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("option --gpus: the cluster file gives it"), std::string::npos)
      << both.err;
}

TEST(AdviseTest, TinyBudgetReportsEverythingOutOfMemoryWithStatus2) {
  const auto r = run_cli(
      {"advise", "--model", kModel, "--gpus", "8", "--mem-budget-gb", "1", "--progress", "none"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(" 0 fit in 1.00 GB per GPU"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("top "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("bubblesim advise: error: no configuration fits in 1.00 GB per GPU"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(AdviseTest, BadOptionsNameTheOption) {
  EXPECT_NE(run_cli({"advise", "--model", kModel, "--gpu", "Z80"}).err.find("A100-80GB"),
            std::string::npos);
  const auto batch = run_cli({"advise", "--model", kModel, "--gpus", "8", "--global-batch", "7",
                              "--microbatch-sizes", "2"});
  EXPECT_EQ(batch.status, 2);
  EXPECT_NE(batch.err.find("--global-batch"), std::string::npos) << batch.err;
  EXPECT_EQ(run_cli({"advise"}).status, 2);
  EXPECT_NE(run_cli({"advise", "--model", kModel, "--chunks", "1,x"}).err.find("--chunks"),
            std::string::npos);
}

}  // namespace
}  // namespace bubblesim::analysis::app
