// `bubblesim advise`: the output does not depend on the thread count, a cluster file stands
// for its slowest GPU and its link between nodes, a budget nothing fits in is an error, and bad
// options are named. The search itself: tests/analysis/app/advise_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/sim/cli/cli_test_util.h"
#include "tests/temp_path.h"

namespace bubblesim::cli {
namespace {

using testing::run_cli;

const std::string kModel = BUBBLESIM_SOURCE_DIR "/models/examples/gpt-1.5b.yaml";

TEST(AdviseCli, OutputIsTheSameOnOneThreadAndOnMany) {
  // Two microbatch sizes of the default six: 75 of the default's 225 configurations, every
  // schedule, the improver on; about 40 s of CPU for both runs instead of 100.
  const std::vector<std::string> args = {"advise", "--model",    kModel,      "--gpus",
                                         "4",      "--gpu",      "A100-40GB", "--microbatch-sizes",
                                         "1,4",    "--progress", "none",      "-j"};
  auto with_jobs = [&](const char* jobs) {
    std::vector<std::string> a = args;
    a.emplace_back(jobs);
    return run_cli(a);
  };
  const auto one = with_jobs("1");
  const auto many = with_jobs("3");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out, many.out);
  EXPECT_NE(one.out.find("top 5 that fit:"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("why the others lost"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("gpipe"), std::string::npos) << one.out;
}

// --cluster is the same search as the options it stands for: the device count, the slowest
// device with the smallest memory, and the link between nodes.
TEST(AdviseCli, ClusterStandsForItsSlowestGpuAndItsLinkBetweenNodes) {
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

TEST(AdviseCli, TinyBudgetReportsEverythingOutOfMemoryWithStatus2) {
  // A small search (4 GPUs, 16 samples): the error path, not the search, is under test.
  const auto r = run_cli({"advise", "--model", kModel, "--gpus", "4", "--global-batch", "16",
                          "--mem-budget-gb", "1", "--progress", "none"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(" 0 fit in 1.00 GB per GPU"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("top "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("bubblesim advise: error: no configuration fits in 1.00 GB per GPU"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(AdviseCli, BadOptionsNameTheOption) {
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
}  // namespace bubblesim::cli
