// The network the engine sends activations and gradients over, when one is given (without one,
// a transfer takes CostModel::transfer_ns and shares nothing).
//
// What is modelled: links, each with a bandwidth and a latency, and for every ordered pair of
// devices a route, the list of links a transfer between them crosses (for a cluster: the
// sender's NVLink port and the receiver's, or the sender's NIC out and the receiver's NIC in).
// A transfer of B bytes on a route takes (B / the bandwidth it gets) and then the route's
// latency (the sum of its links' latencies). Transfers in flight share links max-min fairly
// (progressive filling): the shares are recomputed by the engine at every event where a transfer
// starts or its data is through, so contention comes from events, not from a formula. One
// transfer alone on its route gets the bandwidth of its slowest link: latency + B / bandwidth.
// Units: bytes, bytes per second, nanoseconds. This type knows nothing about files: models/
// builds it from a cluster description.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "sim/op.h"

namespace bubblesim::sim {

struct Link {
  double bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();  // > 0, inf allowed
  TimeNs latency_ns = 0;                                                   // >= 0
};

class Network {
 public:
  // `num_devices` devices, no links, and no routes yet.
  explicit Network(int num_devices = 0);

  // Adds a link and returns its id. Precondition (checked): bandwidth > 0, latency >= 0.
  int add_link(const Link& link);
  // Sets the route from `src` to `dst` (src != dst) to the links `link_ids`, in the order a
  // transfer crosses them. Precondition (checked): devices and links exist.
  void set_route(int src, int dst, std::vector<int> link_ids);

  int num_devices() const { return num_devices_; }
  const std::vector<Link>& links() const { return links_; }
  // The route from src to dst; empty when none was set (the engine then rejects a transfer).
  const std::vector<int>& route(int src, int dst) const {
    return routes_[static_cast<std::size_t>(src) * static_cast<std::size_t>(num_devices_) +
                   static_cast<std::size_t>(dst)];
  }
  // Sum of the route's latencies, and the bandwidth of its slowest link (inf for an empty
  // route or one of infinite links).
  TimeNs route_latency_ns(int src, int dst) const;
  double route_bandwidth_bytes_per_s(int src, int dst) const;
  // A transfer of `bytes` alone on its route: latency + bytes / bandwidth, rounded up to the ns.
  TimeNs uncontended_ns(int src, int dst, double bytes) const;

 private:
  int num_devices_ = 0;
  std::vector<Link> links_;
  std::vector<std::vector<int>> routes_;  // [src * num_devices + dst]
};

// Time of `bytes` at `bytes_per_ns`, in whole ns, rounded up (a hair of floating-point noise
// above a whole number does not add a nanosecond). 0 for 0 bytes or infinite bandwidth.
TimeNs data_time_ns(double bytes, double bytes_per_ns);

}  // namespace bubblesim::sim
