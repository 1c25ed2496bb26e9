// Cluster descriptions (YAML): nodes of GPUs, the links between them, per-device speed, and the
// placement of pipeline stages and data-parallel replicas onto devices. docs/cluster-format.md
// describes the file; models/examples/ holds examples.
//
// Devices are numbered node by node in the order of the file's node groups: node 0's GPUs are
// devices 0 .. g-1, node 1's the next g, and so on. A run of p pipeline devices and N
// replicas uses N*p "logical" devices, replica r's pipeline device d being logical device
// r*p + d; the placement maps each to a physical device:
//   pipeline-major (the default): logical device i on physical device i, so a pipeline fills
//     nodes in order (on 8-GPU nodes, an 8-stage pipeline stays on one node's NVLink and the
//     replicas' gradient all-reduce crosses the network);
//   replica-major: replica r's stage d on physical device d*N + r, so the replicas of a stage
//     sit next to each other and the pipeline crosses nodes;
//   or an explicit list per replica of the physical devices of its pipeline.
// Links: each GPU has an intra-node port out and in (NVLink through NVSwitch, or PCIe), each
// node `nics` NICs, each with a port out and in; GPU k of a node uses NIC k * nics / g. A
// transfer inside a node crosses the sender's port out and the receiver's port in; between
// nodes the sender's NIC out and the receiver's NIC in. The latency of a route is its link
// type's latency (kept on the sending port).
#pragma once

#include <string>
#include <vector>

#include "models/gpu_catalogue.h"
#include "sim/network.h"

namespace bubblesim::models {

struct LinkSpec {
  std::string type;               // nvlink, pcie (intra-node); infiniband, roce, ethernet
  double bandwidth_gb_per_s = 0;  // per port and direction, GB/s (10^9 bytes); inf allowed
  double latency_us = 0;
};

enum class PlacementOrder { PipelineMajor, ReplicaMajor };

struct Cluster {
  std::string path;  // the file, for error messages
  std::string name;
  // Per physical device: its GPU, its node, its NIC (global index), and the factor its op
  // durations are multiplied by: slowdown / speed_factor (1 for a device run as specified).
  std::vector<GpuSpec> gpus;
  std::vector<int> node;
  std::vector<int> nic;
  std::vector<double> time_factor;
  int num_nics = 0;
  LinkSpec intra_node;
  LinkSpec inter_node;
  PlacementOrder order = PlacementOrder::PipelineMajor;
  std::vector<std::vector<int>> explicit_placement;  // per replica; empty: by `order`
  int placement_line = 0;  // 1-based line of `placement` (or of the file's start), for errors

  int num_devices() const { return static_cast<int>(gpus.size()); }
};

// Reads a cluster file. Throws InvalidArgument naming the file, line and key for: a file that
// cannot be read or is not YAML, a missing or unknown key, an unknown GPU type (listing the
// valid ones), a bandwidth <= 0 or latency < 0, counts < 1, speed factors <= 0, a device index
// out of range, and a placement naming a device twice or one that does not exist.
Cluster load_cluster(const std::string& path);

// Logical device -> physical device for `pp` pipeline devices and `dp` replicas (see above).
// Throws InvalidArgument naming the file, the line of `placement` and the key when the
// placement needs more devices than the cluster has, or an explicit placement does not have
// dp lists of pp devices.
std::vector<int> place(const Cluster& cluster, int pp, int dp);

// The network between the logical devices of `placement` (sim/network.h).
sim::Network build_network(const Cluster& cluster, const std::vector<int>& placement);

}  // namespace bubblesim::models
