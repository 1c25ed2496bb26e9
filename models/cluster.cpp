#include "models/cluster.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <ios>
#include <set>

#include "sim/error.h"

namespace bubblesim::models {

namespace {

// Reads one file, so that every error names it.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& what) const {
    throw InvalidArgument(path_ + ": line " + std::to_string(mark.line + 1) + ": " + what);
  }

  // Rejects keys of `map` outside `known` (listing them), and a `map` that is not a mapping.
  void keys(const YAML::Node& map, const std::string& what,
            const std::vector<std::string>& known) const {
    if (!map.IsMap()) fail(map.Mark(), what + ": expected a mapping");
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string valid;
      for (const std::string& k : known)
        valid += (valid.empty() ? "" : ", ") + k;
      fail(entry.first.Mark(),
           "unknown key '" + key + "' in " + what + "; valid keys are: " + valid);
    }
  }

  YAML::Node required(const YAML::Node& map, const char* key, const std::string& what) const {
    const YAML::Node node = map[key];
    if (!node) fail(map.Mark(), std::string("missing key '") + key + "' in " + what);
    return node;
  }

  // A number (YAML's .inf allowed where `allow_inf`) checked by `ok`, described by `expected`.
  double number(const YAML::Node& node, const char* key, bool (*ok)(double),
                const char* expected) const {
    double value = NAN;
    try {
      value = node.as<double>();
    } catch (const YAML::Exception&) {
    }
    if (std::isnan(value) || !ok(value)) {
      fail(node.Mark(), std::string("key '") + key + "': expected " + expected + ", got '" +
                            YAML::Dump(node) + "'");
    }
    return value;
  }
  int count(const YAML::Node& node, const char* key) const {
    const double v = number(
        node, key, [](double x) { return x >= 1 && x <= 1e6 && x == std::floor(x); },
        "a whole number >= 1");
    return static_cast<int>(v);
  }
  std::string text(const YAML::Node& node, const char* key) const {
    if (!node.IsScalar()) fail(node.Mark(), std::string("key '") + key + "': expected a name");
    return node.as<std::string>();
  }

  LinkSpec link(const YAML::Node& node, const char* where,
                const std::set<std::string>& types) const {
    keys(node, std::string("links.") + where, {"type", "bandwidth_gb_per_s", "latency_us"});
    LinkSpec l;
    const YAML::Node type = required(node, "type", std::string("links.") + where);
    l.type = text(type, "type");
    if (types.count(l.type) == 0) {
      std::string valid;
      for (const std::string& t : types)
        valid += (valid.empty() ? "" : ", ") + t;
      fail(type.Mark(), "key 'type': unknown " + std::string(where) + " link type '" + l.type +
                            "'; valid values are: " + valid);
    }
    l.bandwidth_gb_per_s = number(
        required(node, "bandwidth_gb_per_s", std::string("links.") + where), "bandwidth_gb_per_s",
        [](double x) { return x > 0; }, "a bandwidth > 0 in GB/s (.inf for unlimited)");
    l.latency_us = number(
        required(node, "latency_us", std::string("links.") + where), "latency_us",
        [](double x) { return x >= 0 && x <= 1e9; }, "a latency >= 0 in microseconds");
    return l;
  }

 private:
  std::string path_;
};

const GpuSpec& gpu_named(const Reader& r, const YAML::Node& node,
                         const std::vector<GpuSpec>& custom) {
  const std::string name = r.text(node, "gpu");
  for (const GpuSpec& g : custom)
    if (g.name == name) return g;
  try {
    return find_gpu(name);
  } catch (const InvalidArgument& e) {
    std::string message = std::string("key 'gpu': ") + e.what();
    for (const GpuSpec& g : custom)
      message += ", " + g.name;
    r.fail(node.Mark(), message);
  }
}

}  // namespace

namespace {

Cluster read_cluster(const std::string& path) {
  const Reader r(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InvalidArgument(path + ": cannot open the cluster file");
  } catch (const YAML::ParserException& e) {
    r.fail(e.mark, "not valid YAML: " + e.msg);
  }
  r.keys(root, "the cluster", {"name", "gpus", "nodes", "links", "devices", "placement"});
  Cluster c;
  c.path = path;
  c.name = root["name"] ? r.text(root["name"], "name") : path;
  c.placement_line = root.Mark().line + 1;

  std::vector<GpuSpec> custom;
  if (const YAML::Node gpus = root["gpus"]) {
    if (!gpus.IsSequence()) r.fail(gpus.Mark(), "key 'gpus': expected a list of GPU types");
    for (const YAML::Node& g : gpus) {
      r.keys(g, "a gpus entry",
             {"name", "dense_bf16_tflops", "memory_gb", "memory_bandwidth_gb_per_s"});
      const auto positive = [](double x) { return x > 0 && std::isfinite(x); };
      custom.push_back(GpuSpec{
          r.text(r.required(g, "name", "a gpus entry"), "name"),
          r.number(r.required(g, "dense_bf16_tflops", "a gpus entry"), "dense_bf16_tflops",
                   positive, "TFLOP/s > 0"),
          r.number(r.required(g, "memory_gb", "a gpus entry"), "memory_gb", positive, "GB > 0"),
          r.number(r.required(g, "memory_bandwidth_gb_per_s", "a gpus entry"),
                   "memory_bandwidth_gb_per_s", positive, "GB/s > 0")});
    }
  }

  const YAML::Node nodes = r.required(root, "nodes", "the cluster");
  if (!nodes.IsSequence() || nodes.size() == 0) {
    r.fail(nodes.Mark(), "key 'nodes': expected a list of node groups");
  }
  int node_index = 0;
  for (const YAML::Node& group : nodes) {
    r.keys(group, "a nodes entry", {"count", "gpus_per_node", "gpu", "nics"});
    const int count = r.count(r.required(group, "count", "a nodes entry"), "count");
    const int per_node =
        r.count(r.required(group, "gpus_per_node", "a nodes entry"), "gpus_per_node");
    const GpuSpec& gpu = gpu_named(r, r.required(group, "gpu", "a nodes entry"), custom);
    const int nics = group["nics"] ? r.count(group["nics"], "nics") : 1;
    if (c.gpus.size() + static_cast<std::size_t>(count) * static_cast<std::size_t>(per_node) >
        100000) {
      r.fail(group.Mark(), "more than 100000 devices");
    }
    if (static_cast<std::int64_t>(c.num_nics) + std::int64_t{count} * nics > 1000000) {
      r.fail(group.Mark(), "more than 1000000 NICs");
    }
    for (int n = 0; n < count; ++n, ++node_index) {
      for (int k = 0; k < per_node; ++k) {
        c.gpus.push_back(gpu);
        c.node.push_back(node_index);
        c.nic.push_back(c.num_nics + static_cast<int>(std::int64_t{k} * nics / per_node));
        c.time_factor.push_back(1.0);
      }
      c.num_nics += nics;
    }
  }

  const YAML::Node links = r.required(root, "links", "the cluster");
  r.keys(links, "links", {"intra_node", "inter_node"});
  c.intra_node = r.link(r.required(links, "intra_node", "links"), "intra_node", {"nvlink", "pcie"});
  c.inter_node = r.link(r.required(links, "inter_node", "links"), "inter_node",
                        {"infiniband", "roce", "ethernet"});

  if (const YAML::Node devices = root["devices"]) {
    if (!devices.IsSequence()) r.fail(devices.Mark(), "key 'devices': expected a list");
    for (const YAML::Node& d : devices) {
      r.keys(d, "a devices entry", {"device", "speed_factor", "slowdown"});
      const YAML::Node index = r.required(d, "device", "a devices entry");
      const double i = r.number(
          index, "device", [](double x) { return x >= 0 && x == std::floor(x); },
          "a device index >= 0");
      if (i >= c.num_devices()) {
        r.fail(index.Mark(), "key 'device': device " + format_number(i) +
                                 " does not exist (the cluster has " +
                                 std::to_string(c.num_devices()) + " devices, 0 to " +
                                 std::to_string(c.num_devices() - 1) + ")");
      }
      const auto positive = [](double x) { return x > 0 && std::isfinite(x); };
      const double speed =
          d["speed_factor"] ? r.number(d["speed_factor"], "speed_factor", positive, "a factor > 0")
                            : 1;
      const double slowdown =
          d["slowdown"] ? r.number(d["slowdown"], "slowdown", positive, "a factor > 0") : 1;
      c.time_factor[static_cast<std::size_t>(i)] = slowdown / speed;
    }
  }

  if (const YAML::Node placement = root["placement"]) {
    for (const auto& entry : root)
      if (entry.first.as<std::string>() == "placement")
        c.placement_line = entry.first.Mark().line + 1;
    r.keys(placement, "placement", {"order", "replicas"});
    if (const YAML::Node order = placement["order"]) {
      const std::string o = r.text(order, "order");
      if (o == "pipeline-major") {
        c.order = PlacementOrder::PipelineMajor;
      } else if (o == "replica-major") {
        c.order = PlacementOrder::ReplicaMajor;
      } else {
        r.fail(order.Mark(),
               "key 'order': expected pipeline-major or replica-major, got '" + o + "'");
      }
    }
    if (const YAML::Node replicas = placement["replicas"]) {
      if (!replicas.IsSequence()) {
        r.fail(replicas.Mark(), "key 'replicas': expected one list of devices per replica");
      }
      std::set<int> used;
      for (const YAML::Node& list : replicas) {
        if (!list.IsSequence()) r.fail(list.Mark(), "key 'replicas': expected a list of devices");
        std::vector<int> devices;
        for (const YAML::Node& item : list) {
          const double d = r.number(
              item, "replicas", [](double x) { return x >= 0 && x == std::floor(x); },
              "a device index >= 0");
          if (d >= c.num_devices()) {
            r.fail(item.Mark(), "key 'replicas': device " + format_number(d) +
                                    " does not exist (the cluster has " +
                                    std::to_string(c.num_devices()) + " devices)");
          }
          if (!used.insert(static_cast<int>(d)).second) {
            r.fail(item.Mark(), "key 'replicas': device " + format_number(d) + " is placed twice");
          }
          devices.push_back(static_cast<int>(d));
        }
        c.explicit_placement.push_back(std::move(devices));
      }
    }
  }
  return c;
}

}  // namespace

std::vector<int> place(const Cluster& c, int pp, int dp) {
  const std::string where =
      c.path + ": line " + std::to_string(c.placement_line) + ": key 'placement': ";
  std::vector<int> out;
  if (!c.explicit_placement.empty()) {
    bool ok = static_cast<int>(c.explicit_placement.size()) == dp;
    for (const auto& list : c.explicit_placement)
      ok = ok && static_cast<int>(list.size()) == pp;
    if (!ok) {
      throw InvalidArgument(where + "'replicas' must hold " + std::to_string(dp) +
                            " list(s) (--dp) of " + std::to_string(pp) + " devices (-p)");
    }
    for (const auto& list : c.explicit_placement)
      out.insert(out.end(), list.begin(), list.end());
    return out;
  }
  const long long need = static_cast<long long>(pp) * dp;
  if (need > c.num_devices()) {
    throw InvalidArgument(where + std::to_string(dp) + " replica(s) of " + std::to_string(pp) +
                          " pipeline devices need " + std::to_string(need) +
                          " devices, but the cluster has " + std::to_string(c.num_devices()));
  }
  for (int r = 0; r < dp; ++r)
    for (int d = 0; d < pp; ++d)
      out.push_back(c.order == PlacementOrder::PipelineMajor ? r * pp + d : d * dp + r);
  return out;
}

sim::Network build_network(const Cluster& c, const std::vector<int>& placement) {
  const int logical = static_cast<int>(placement.size());
  sim::Network net(logical);
  const auto link = [&](const LinkSpec& spec, bool with_latency) {
    return net.add_link(sim::Link{
        spec.bandwidth_gb_per_s * 1e9,
        with_latency ? static_cast<sim::TimeNs>(std::llround(spec.latency_us * 1e3)) : 0});
  };
  // Ports only for the physical devices and NICs in use, in order of first use.
  std::vector<int> port_out(c.gpus.size(), -1), port_in(c.gpus.size(), -1);
  std::vector<int> nic_out(static_cast<std::size_t>(c.num_nics), -1), nic_in(nic_out.size(), -1);
  for (const int p : placement) {
    const auto d = static_cast<std::size_t>(p);
    if (port_out[d] < 0) {
      port_out[d] = link(c.intra_node, true);
      port_in[d] = link(c.intra_node, false);
    }
    const auto n = static_cast<std::size_t>(c.nic[d]);
    if (nic_out[n] < 0) {
      nic_out[n] = link(c.inter_node, true);
      nic_in[n] = link(c.inter_node, false);
    }
  }
  for (int a = 0; a < logical; ++a) {
    for (int b = 0; b < logical; ++b) {
      if (a == b) continue;
      const auto pa = static_cast<std::size_t>(placement[static_cast<std::size_t>(a)]);
      const auto pb = static_cast<std::size_t>(placement[static_cast<std::size_t>(b)]);
      if (c.node[pa] == c.node[pb]) {
        net.set_route(a, b, {port_out[pa], port_in[pb]});
      } else {
        net.set_route(a, b,
                      {nic_out[static_cast<std::size_t>(c.nic[pa])],
                       nic_in[static_cast<std::size_t>(c.nic[pb])]});
      }
    }
  }
  return net;
}

Cluster load_cluster(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InvalidArgument(path + ": is a directory, expected a cluster file (YAML)");
  }
  try {
    return read_cluster(path);
  } catch (const YAML::Exception& e) {
    // A value of the wrong type that no check above caught.
    if (e.mark.is_null()) throw InvalidArgument(path + ": " + e.msg);
    Reader(path).fail(e.mark, e.msg);
  } catch (const std::ios_base::failure& e) {
    throw InvalidArgument(path + ": cannot read the cluster file (" + e.what() + ")");
  }
}

}  // namespace bubblesim::models
