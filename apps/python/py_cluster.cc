// parex.Cluster (py_cluster.h).
#include "apps/python/py_cluster.h"

#include <pybind11/stl.h>

#include <algorithm>

namespace parex::python {

PyCluster::PyCluster(const std::string& topology_path,
                     const std::string& given) {
  topology_ = ValueOrThrow(LoadTopology(topology_path));
  // Under mpirun (a topology of collective MPI) the node of the rank.
  node_ = ValueOrThrow(train::NodeOfThisProcess(topology_, given, "node"));
  const std::string& node = node_;
  rank_ = topology_.Rank(node);
  if (rank_ < 0) {
    std::string names;
    for (const TopologyNode& n : topology_.nodes) {
      names += (names.empty() ? "" : ", ") + n.name;
    }
    throw StatusError{NotFound(topology_.path + ": no node '" + node +
                               "' (nodes: " + names + ")")};
  }
  ThrowIfError(ParallelExecutor::CheckPlaces(places()).WithContext(
      topology_.path + ": node '" + node + "': places"));
  StatusOr<std::unique_ptr<train::ClusterSession>> joined =
      Internal("not joined");
  {
    py::gil_scoped_release release;
    // The scripts' programs are not known yet: the nodes agree on the
    // topology; the executors' parameters start as rank 0's.
    joined = train::ClusterSession::Join("python", topology_, node, Program(),
                                         Program(), "python");
  }
  session_ = ValueOrThrow(std::move(joined));
}

PyCluster::~PyCluster() {
  py::gil_scoped_release release;  // the actor system's threads wind down
  session_->ClearLostHandler();
  session_.reset();
}

Status PyCluster::Configure(BuildStrategy* build,
                            ExecutionStrategy* exec) const {
  if (left_) {
    return FailedPrecondition("node '" + node_ + "' has left its cluster");
  }
  session_->Configure(world_places(), first_place(), build, exec);
  return Status::Ok();
}

Status PyCluster::BroadcastPersistables(Scope* scope) {
  if (left_) {
    return FailedPrecondition("node '" + node_ + "' has left its cluster");
  }
  std::vector<std::string> names = scope->LocalVarNames();
  std::sort(names.begin(), names.end());
  return session_->BroadcastPersistables(scope, names);
}

void PyCluster::AbortOnLoss(ParallelExecutor* pe) {
  if (left_) return;
  session_->AbortOnLoss(pe);
  watched_ = pe;
}

void PyCluster::Forget(ParallelExecutor* pe) {
  if (!left_ && watched_ == pe) {
    session_->ClearLostHandler();
    watched_ = nullptr;
  }
}

void PyCluster::Leave() {
  if (left_) return;
  left_ = true;
  session_->ClearLostHandler();
  watched_ = nullptr;
  Status s;
  {
    py::gil_scoped_release release;
    s = session_->Leave();
  }
  // The session itself goes with this object, after every executor that
  // uses its communicators (they keep this object alive).
  ThrowIfError(s);
}

void BindCluster(py::module_& m) {
  py::class_<PyCluster>(m, "Cluster")
      .def(py::init<const std::string&, const std::string&>(),
           py::arg("topology"), py::arg("node") = "")
      .def_property_readonly("rank", &PyCluster::rank)
      .def_property_readonly("size", &PyCluster::size)
      .def_property_readonly("node", &PyCluster::node)
      .def_property_readonly("places", &PyCluster::places)
      .def_property_readonly("world_places", &PyCluster::world_places)
      .def_property_readonly("first_place", &PyCluster::first_place)
      .def("leave", &PyCluster::Leave);
}

}  // namespace parex::python
