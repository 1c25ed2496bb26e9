#include "sim/network.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/error.h"

namespace bubblesim::sim {

Network::Network(int num_devices)
    : num_devices_(num_devices),
      routes_(static_cast<std::size_t>(num_devices) * static_cast<std::size_t>(num_devices)) {
  BUBBLESIM_CHECK(num_devices >= 0, "negative device count");
}

int Network::add_link(const Link& link) {
  BUBBLESIM_CHECK(link.bandwidth_bytes_per_s > 0, "link bandwidth must be > 0");
  BUBBLESIM_CHECK(link.latency_ns >= 0, "link latency must be >= 0");
  links_.push_back(link);
  return static_cast<int>(links_.size()) - 1;
}

void Network::set_route(int src, int dst, std::vector<int> link_ids) {
  BUBBLESIM_CHECK(src >= 0 && src < num_devices_ && dst >= 0 && dst < num_devices_ && src != dst,
                  "route between devices " + std::to_string(src) + " and " + std::to_string(dst));
  for (const int id : link_ids)
    BUBBLESIM_CHECK(id >= 0 && id < static_cast<int>(links_.size()), "route names no link");
  routes_[static_cast<std::size_t>(src) * static_cast<std::size_t>(num_devices_) +
          static_cast<std::size_t>(dst)] = std::move(link_ids);
}

TimeNs Network::route_latency_ns(int src, int dst) const {
  TimeNs total = 0;
  for (const int id : route(src, dst))
    total += links_[static_cast<std::size_t>(id)].latency_ns;
  return total;
}

double Network::route_bandwidth_bytes_per_s(int src, int dst) const {
  double bw = std::numeric_limits<double>::infinity();
  for (const int id : route(src, dst))
    bw = std::min(bw, links_[static_cast<std::size_t>(id)].bandwidth_bytes_per_s);
  return bw;
}

TimeNs Network::uncontended_ns(int src, int dst, double bytes) const {
  return route_latency_ns(src, dst) +
         data_time_ns(bytes, route_bandwidth_bytes_per_s(src, dst) / 1e9);
}

TimeNs data_time_ns(double bytes, double bytes_per_ns) {
  if (bytes <= 0 || std::isinf(bytes_per_ns)) return 0;
  const double ns = std::ceil(bytes / bytes_per_ns - 1e-6);
  // Beyond int64 the cast would wrap (to a free transfer); beyond the longest op time the link
  // is surely mistyped.
  if (!(ns <= static_cast<double>(kMaxDurationNs))) {
    throw InvalidArgument("a transfer of " + format_number(bytes) + " bytes at " +
                          format_number(bytes_per_ns) +
                          " GB/s would take more than 1e9 ms; check the links' bandwidth");
  }
  return static_cast<TimeNs>(ns);
}

}  // namespace bubblesim::sim
