// Cluster files, placement, the network built from them, and the collective cost models
// (models/cluster.h, models/collectives.h).
#include "models/cluster.h"
#include "tests/temp_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "models/collectives.h"
#include "sim/error.h"
#include "sim/replicas.h"
#include "sim/simulation.h"
#include "tests/sim/test_util.h"

namespace bubblesim::models {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = bubblesim::testing::temp_path("cluster_test_" + name + ".yaml");
  std::ofstream(path) << text;
  return path;
}

const std::string kLinks =
    "links:\n"
    "  intra_node: {type: nvlink, bandwidth_gb_per_s: 300, latency_us: 3}\n"
    "  inter_node: {type: roce, bandwidth_gb_per_s: 25, latency_us: 10}\n";

TEST(Cluster, ReadsTheShippedExamples) {
  const Cluster paper = load_cluster(BUBBLESIM_SOURCE_DIR "/models/examples/a100-4x8-roce.yaml");
  EXPECT_EQ(paper.num_devices(), 32);
  EXPECT_EQ(paper.gpus[31].name, "A100-80GB");
  EXPECT_EQ(paper.node[8], 1);
  EXPECT_EQ(paper.inter_node.type, "roce");
  EXPECT_EQ(paper.inter_node.bandwidth_gb_per_s, 25);
  const Cluster mixed = load_cluster(BUBBLESIM_SOURCE_DIR "/models/examples/mixed-a100-h100.yaml");
  EXPECT_EQ(mixed.num_devices(), 8);
  EXPECT_EQ(mixed.gpus[3].name, "A100-80GB");
  EXPECT_EQ(mixed.gpus[4].name, "H100-SXM");
  EXPECT_DOUBLE_EQ(mixed.time_factor[2], 1.2);
  EXPECT_DOUBLE_EQ(mixed.time_factor[3], 1.0);
}

TEST(Cluster, PlacesPipelineMajorReplicaMajorOrAsListed) {
  const std::string nodes = "nodes:\n  - {count: 2, gpus_per_node: 4, gpu: H200, nics: 2}\n";
  Cluster c = load_cluster(write_file("place", nodes + kLinks));
  EXPECT_EQ(place(c, 4, 2), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  c.order = PlacementOrder::ReplicaMajor;
  EXPECT_EQ(place(c, 4, 2), (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(c.nic, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  const Cluster listed = load_cluster(
      write_file("listed", nodes + kLinks + "placement:\n  replicas: [[7, 6], [0, 1]]\n"));
  EXPECT_EQ(place(listed, 2, 2), (std::vector<int>{7, 6, 0, 1}));
  // The network: inside a node the two NVLink ports, across nodes the two NICs.
  const sim::Network net = build_network(c, place(c, 4, 2));      // replica-major
  EXPECT_EQ(net.route_latency_ns(0, 1), 3000);                    // physical 0 -> 2: NVLink
  EXPECT_EQ(net.uncontended_ns(0, 4, 3e6), 3000 + 10'000);        // physical 0 -> 1, same node
  EXPECT_EQ(net.uncontended_ns(0, 3, 25e6), 10'000 + 1'000'000);  // physical 0 -> 6: RoCE
}

TEST(Cluster, BadFilesNameTheFileLineAndKey) {
  const std::string nodes = "nodes:\n  - {count: 1, gpus_per_node: 4, gpu: A100-80GB}\n";
  const std::pair<std::string, std::string> cases[] = {
      {"nodes:\n  - {count: 1, gpus_per_node: 4, gpu: V100}\n" + kLinks,
       "line 2: key 'gpu': unknown GPU type 'V100'; valid values are: A100-40GB, A100-80GB, "
       "H100-SXM, H200, L40S"},
      {nodes + "links:\n  intra_node: {type: nvlink, bandwidth_gb_per_s: -300, latency_us: 3}\n"
               "  inter_node: {type: roce, bandwidth_gb_per_s: 25, latency_us: 10}\n",
       "line 4: key 'bandwidth_gb_per_s': expected a bandwidth > 0 in GB/s (.inf for unlimited), "
       "got '-300'"},
      {"nodes:\n  - {count: 1, gpu: A100-80GB}\n" + kLinks,
       "line 2: missing key 'gpus_per_node' in a nodes entry"},
      {nodes, "line 1: missing key 'links' in the cluster"},
      {nodes + kLinks + "placement:\n  replicas: [[0, 1], [2, 9]]\n",
       "line 7: key 'replicas': device 9 does not exist (the cluster has 4 devices)"},
      {nodes + kLinks + "devices:\n  - {device: 4, speed_factor: 0.5}\n",
       "line 7: key 'device': device 4 does not exist"},
      {nodes + kLinks + "speed: 3\n", "line 6: unknown key 'speed' in the cluster"},
      {nodes + "links: {intra_node: [1\n", "not valid YAML"},
  };
  for (const auto& [text, needle] : cases) {
    const std::string path = write_file("bad", text);
    try {
      load_cluster(path);
      FAIL() << text;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\n"
                                                                       << needle;
    }
  }
  // Placing more devices than the cluster has.
  const std::string path =
      write_file("small", nodes + kLinks + "placement:\n  order: pipeline-major\n");
  const Cluster small = load_cluster(path);
  try {
    place(small, 4, 2);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              path +
                  ": line 6: key 'placement': 2 replica(s) of 4 pipeline devices need 8 "
                  "devices, but the cluster has 4");
  }
}

TEST(Collectives, AllReduceClosedForms) {
  // Ring: 2(n-1)/n * bytes/bw + 2(n-1) latency; tree: 2 ceil(log2 n) latency + 2 bytes/bw.
  EXPECT_EQ(ring_allreduce_ns(4, 1e9, 25e9, 10'000), 60'000'000 + 60'000);
  EXPECT_EQ(tree_allreduce_ns(4, 1e9, 25e9, 10'000), 80'000'000 + 40'000);
  EXPECT_EQ(tree_allreduce_ns(5, 1e9, 25e9, 10'000), 80'000'000 + 60'000);
  EXPECT_EQ(ring_allreduce_ns(1, 1e9, 25e9, 10'000), 0);
  // Over the paper-like cluster, replicas pipeline-major on 4 nodes: the ring crosses RoCE
  // (25 GB/s, 10 us).
  const Cluster c = load_cluster(BUBBLESIM_SOURCE_DIR "/models/examples/a100-4x8-roce.yaml");
  const sim::Network net = build_network(c, place(c, 8, 4));
  const std::vector<int> stage0 = {0, 8, 16, 24};
  EXPECT_EQ(allreduce_ns(net, stage0, 1e9, AllReduceAlgorithm::Ring),
            ring_allreduce_ns(4, 1e9, 25e9, 10'000));
  EXPECT_EQ(allreduce_ns(net, stage0, 1e9, AllReduceAlgorithm::Tree),
            tree_allreduce_ns(4, 1e9, 25e9, 10'000));
  // Inside one node: NVLink.
  EXPECT_EQ(allreduce_ns(net, {0, 1, 2, 3}, 1e9, AllReduceAlgorithm::Ring),
            ring_allreduce_ns(4, 1e9, 300e9, 3000));
}

TEST(Collectives, EachStageAllReducesAfterItsLastWeightGradient) {
  const Cluster c = load_cluster(BUBBLESIM_SOURCE_DIR "/models/examples/a100-4x8-roce.yaml");
  const sim::Network net = build_network(c, place(c, 4, 2));  // two replicas on node 0
  const sim::Schedule one = sim::testing::generate("1f1b", 4, 8);
  const sim::Schedule both = sim::combine_replicas({one, one});
  const auto costs = sim::testing::uniform_costs(8, 1, 1, 1, 0);  // BW = 2 ms
  const sim::SimulationResult r = sim::simulate(both, costs);
  IterationInputs in;
  in.pp = 4;
  in.dp = 2;
  in.grad_bytes = {3e9, 3e9, 3e9, 3e9};
  in.optimizer_ns = std::vector<sim::TimeNs>(8, 0);
  in.network = &net;
  const IterationTime t = finish_iteration(both, r.timeline, in);
  const sim::TimeNs ar = ring_allreduce_ns(2, 3e9, 300e9, 3000);  // 2 replicas over NVLink
  EXPECT_EQ(t.dp_allreduce_ns, ar);
  EXPECT_EQ(t.pipeline_ns, r.metrics.iteration_time_ns);
  // Stage 0 finishes last (1F1B), so its all-reduce ends the iteration.
  EXPECT_EQ(t.iteration_ns, r.metrics.iteration_time_ns + ar);
  // Optimizer: all-reduce sync adds the sync and the step to the end; post-validation lets
  // each device step after its own last op.
  in.optimizer_ns = std::vector<sim::TimeNs>(8, 5'000'000);
  in.sync = OptimizerSync::AllReduce;
  in.sync_ns = 70'000;
  EXPECT_EQ(finish_iteration(both, r.timeline, in).iteration_ns,
            r.metrics.iteration_time_ns + ar + 70'000 + 5'000'000);
  in.sync = OptimizerSync::PostValidation;
  EXPECT_EQ(finish_iteration(both, r.timeline, in).iteration_ns,
            r.metrics.max_device_span_ns + ar + 5'000'000);
}

}  // namespace
}  // namespace bubblesim::models
