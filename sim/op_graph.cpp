#include "sim/op_graph.h"

#include <algorithm>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/exception.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <string>

namespace bubblesim::sim {

namespace {

std::string describe_cycle(const std::vector<Op>& cycle) {
  constexpr std::size_t kShown = 12;
  std::string s =
      "schedule deadlocks: dependency cycle of " + std::to_string(cycle.size()) + " ops: ";
  for (std::size_t i = 0; i < cycle.size() && i < kShown; ++i)
    s += to_string(cycle[i]) + " -> ";
  if (cycle.size() > kShown) s += "... -> ";
  return s + (cycle.empty() ? std::string("?") : to_string(cycle.front()));
}

}  // namespace

DeadlockError::DeadlockError(const std::vector<Op>& cycle)
    : ScheduleError(describe_cycle(cycle), cycle) {}

OpGraph::OpGraph(const Schedule& schedule, const CostModel& costs, P2pMode p2p) {
  schedule.validate();
  const OpSlots slots(schedule.num_stages(), schedule.num_microbatches);
  std::vector<Vertex> vertex_of(slots.size());
  std::size_t pairs = 0;
  for (const auto& positions : schedule.overlapped_pairs)
    pairs += positions.size();
  graph_ = Graph(schedule.num_ops() - pairs);
  Vertex v = 0;
  for (int d = 0; d < schedule.num_devices(); ++d) {
    const auto& ops = schedule.device_ops[static_cast<std::size_t>(d)];
    const auto& paired_at = schedule.pairs_of(d);
    auto next_pair = paired_at.begin();
    device_sizes_.push_back(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i, ++v) {
      if (i > 0) boost::add_edge(v - 1, v, EdgeData{0, true}, graph_);
      vertex_of[slots(ops[i])] = v;
      if (next_pair == paired_at.end() || *next_pair != i) {
        graph_[v] = VertexData{ops[i], Op{}, false, d, i, costs.duration_ns(ops[i], d)};
        continue;
      }
      graph_[v] =
          VertexData{ops[i], ops[i + 1], true, d, i, costs.overlapped_ns(ops[i], ops[i + 1], d)};
      vertex_of[slots(ops[i + 1])] = v;
      ++next_pair;
      ++i;
    }
  }
  for (v = 0; v < num_vertices(); ++v) {
    const VertexData& data = graph_[v];
    for (const Op* op : {&data.op, data.paired ? &data.partner : nullptr}) {
      SlotRef input{};
      if (op == nullptr ||
          !data_input(op->kind, op->stage, schedule.route(op->microbatch), input)) {
        continue;
      }
      // An input from the vertex itself (a pair that feeds itself) is a cycle of one.
      const Vertex u = vertex_of[slots(input.slot, input.stage, op->microbatch)];
      const int src = graph_[u].device;
      const TimeNs delay = src == data.device ? 0 : costs.transfer_ns(src, data.device);
      boost::add_edge(u, v, EdgeData{delay, false}, graph_);
    }
  }
  if (p2p == P2pMode::Async) return;
  std::vector<TimeNs> send(num_vertices(), 0), receive(num_vertices(), 0);
  for (const auto e : boost::make_iterator_range(boost::edges(graph_))) {
    if (graph_[e].order) continue;
    const Vertex u = boost::source(e, graph_), v = boost::target(e, graph_);
    send[u] += graph_[e].delay_ns;
    receive[v] = std::max(receive[v], graph_[e].delay_ns);
  }
  for (const auto e : boost::make_iterator_range(boost::edges(graph_))) {
    const Vertex u = boost::source(e, graph_), v = boost::target(e, graph_);
    graph_[e].delay_ns = receive[v] + (graph_[e].order ? send[u] : 0);
  }
}

void OpGraph::append_ops(Vertex v, std::vector<Op>& ops) const {
  ops.push_back(graph_[v].op);
  if (graph_[v].paired) ops.push_back(graph_[v].partner);
}

std::vector<Op> OpGraph::find_cycle() const {
  struct Found {
    Vertex from, to;
  };
  struct Visitor : boost::default_dfs_visitor {
    std::vector<Vertex>* parent;
    void tree_edge(Graph::edge_descriptor e, const Graph& g) const {
      (*parent)[boost::target(e, g)] = boost::source(e, g);
    }
    void back_edge(Graph::edge_descriptor e, const Graph& g) const {
      throw Found{boost::source(e, g), boost::target(e, g)};
    }
  };
  std::vector<Vertex> parent(num_vertices());
  Visitor visitor;
  visitor.parent = &parent;
  try {
    boost::depth_first_search(graph_, boost::visitor(visitor));
  } catch (const Found& found) {
    // The back edge closes the cycle: `to` is an ancestor of `from` in the DFS tree.
    std::vector<Vertex> chain;
    for (Vertex x = found.from; x != found.to; x = parent[x])
      chain.push_back(x);
    chain.push_back(found.to);
    std::vector<Op> cycle;
    for (auto x = chain.rbegin(); x != chain.rend(); ++x)
      append_ops(*x, cycle);
    return cycle;
  }
  return {};
}

void OpGraph::check_acyclic() const {
  std::vector<Op> cycle = find_cycle();
  if (!cycle.empty()) throw DeadlockError(std::move(cycle));
}

OpGraph::LongestPaths OpGraph::longest_paths() const {
  std::vector<Vertex> reverse_topo;
  try {
    boost::topological_sort(graph_, std::back_inserter(reverse_topo));
  } catch (const boost::not_a_dag&) {
    check_acyclic();
    throw;  // unreachable: check_acyclic found the cycle
  }
  LongestPaths paths{std::vector<TimeNs>(num_vertices(), 0), std::vector<Vertex>(num_vertices())};
  for (auto it = reverse_topo.rbegin(); it != reverse_topo.rend(); ++it) {
    const Vertex v = *it;
    paths.via[v] = v;
    for (const auto e : boost::make_iterator_range(boost::in_edges(v, graph_))) {
      const Vertex u = boost::source(e, graph_);
      const TimeNs ready = paths.start_ns[u] + graph_[u].duration_ns + graph_[e].delay_ns;
      if (ready > paths.start_ns[v] || (paths.via[v] == v && ready == paths.start_ns[v])) {
        paths.start_ns[v] = ready;
        paths.via[v] = u;
      }
    }
  }
  return paths;
}

Timeline OpGraph::earliest_times() const {
  const LongestPaths paths = longest_paths();
  Timeline timeline;
  for (std::size_t size : device_sizes_)
    timeline.device_ops.emplace_back(size);
  for (Vertex v = 0; v < num_vertices(); ++v) {
    const VertexData& data = graph_[v];
    auto& timings = timeline.device_ops[static_cast<std::size_t>(data.device)];
    const OpTiming timing{paths.start_ns[v], paths.start_ns[v] + data.duration_ns};
    timings[data.index] = timing;
    if (data.paired) timings[data.index + 1] = timing;
  }
  return timeline;
}

CriticalPath OpGraph::critical_path() const {
  const LongestPaths paths = longest_paths();
  CriticalPath path;
  Vertex last = 0;
  for (Vertex v = 0; v < num_vertices(); ++v) {
    const TimeNs end = paths.start_ns[v] + graph_[v].duration_ns;
    if (end > path.length_ns) {
      path.length_ns = end;
      last = v;
    }
  }
  if (num_vertices() == 0) return path;
  std::vector<Vertex> chain;
  for (Vertex v = last;; v = paths.via[v]) {
    chain.push_back(v);
    if (paths.via[v] == v) break;
  }
  for (auto v = chain.rbegin(); v != chain.rend(); ++v)
    append_ops(*v, path.ops);
  return path;
}

void check_runnable(const Schedule& schedule) {
  schedule.validate();
  const auto no_costs = PerDeviceCostModel::uniform({0, 0, 0, 0, 0, 0}, schedule.num_devices());
  OpGraph(schedule, no_costs).check_acyclic();
}

}  // namespace bubblesim::sim
