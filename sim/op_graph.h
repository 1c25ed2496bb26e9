// OpGraph: a schedule as a dependency graph (Boost.Graph), for validation and as the oracle
// the engine is tested against.
//
// Vertices are compute slots, weighted by their duration: an op, or an overlapped pair
// (Schedule::overlapped_pairs) as one vertex with both ops' inputs and outputs. Edges are data
// dependencies (DESIGN.md §3), weighted by the transfer time when producer and consumer sit on
// different devices, and the per-device order (weight 0). The earliest start of every op is
// then the longest path to it, which is exactly what the engine computes by simulation.
// With P2pMode::Blocking (engine.h), a vertex's receive time (the longest transfer into it
// from another device) is added to every edge into it instead, and its sender's send time
// (all its transfers to other devices) to the order edge out of the sender.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <vector>

#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/schedule.h"

namespace bubblesim::sim {

// The schedule deadlocks: its ops wait on each other in a cycle. cycle() lists the ops on one
// such cycle, each waiting for the one before it (and the first for the last).
class DeadlockError : public ScheduleError {
 public:
  explicit DeadlockError(const std::vector<Op>& cycle);
  const std::vector<Op>& cycle() const { return ops(); }
};

struct CriticalPath {
  TimeNs length_ns = 0;  // latest end of any op, with every op starting as early as it can
  std::vector<Op> ops;   // the chain that makes it so, first op to last (both of a pair)
};

class OpGraph {
 public:
  // Validates the schedule (Schedule::validate) and builds its graph. A cycle is allowed here;
  // check_acyclic reports it. The cost model must cover every device of the schedule.
  OpGraph(const Schedule& schedule, const CostModel& costs, P2pMode p2p = P2pMode::Async);

  // Compute slots: the schedule's ops, less one per overlapped pair.
  std::size_t num_vertices() const { return boost::num_vertices(graph_); }
  std::size_t num_edges() const { return boost::num_edges(graph_); }

  // The ops of one dependency cycle (both ops of a pair on it), or an empty list when the
  // graph is acyclic.
  std::vector<Op> find_cycle() const;
  // Throws DeadlockError when the graph has a cycle.
  void check_acyclic() const;

  // Earliest start and end of every op: longest paths from the ops without inputs. Same shape
  // as the engine's Timeline. Throws DeadlockError on a cycle.
  Timeline earliest_times() const;
  // The longest path through the graph. Throws DeadlockError on a cycle.
  CriticalPath critical_path() const;

 private:
  struct VertexData {
    Op op;
    Op partner;           // the backward of an overlapped pair whose forward is `op`
    bool paired = false;  // whether `partner` is one
    int device = 0;
    std::size_t index = 0;  // position of `op` in the device's order (`partner` is next)
    TimeNs duration_ns = 0;
  };
  struct EdgeData {
    TimeNs delay_ns = 0;
    bool order = false;  // the per-device order, else a data dependency
  };
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexData, EdgeData>;
  using Vertex = Graph::vertex_descriptor;

  struct LongestPaths {
    std::vector<TimeNs> start_ns;  // per vertex
    std::vector<Vertex> via;       // per vertex: the predecessor that decided its start, or itself
  };
  LongestPaths longest_paths() const;
  // Appends the vertex's ops (one, or both of a pair) to `ops`.
  void append_ops(Vertex v, std::vector<Op>& ops) const;

  Graph graph_;
  std::vector<std::size_t> device_sizes_;
};

// Validates `schedule` (Schedule::validate) and checks that its order can run: no cycle of
// dependencies, whatever the costs. Throws ScheduleError, or DeadlockError naming the cycle.
void check_runnable(const Schedule& schedule);

}  // namespace bubblesim::sim
