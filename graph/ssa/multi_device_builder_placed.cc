// A placed program's exchanges with the pservers (BuildStrategy::
// placed_node, placed_exchanges.h), as parts of the multi-device builder
// (multi_device_builder_impl.h).
#include <string>
#include <utility>
#include <vector>

#include "graph/ssa/multi_device_builder_impl.h"

namespace parex::multi_device {

void Builder::AddPlacedSends(int index) {
  if (!placed_ || strategy_.placed_pserver) return;
  for (const PlacedExchange& e : exchanges_) {
    if (e.producer != index) continue;
    AddCollective(SsaOpKind::kReduce, e.grads, 0);
    SsaOp& send = graph_.mutable_op(static_cast<int>(graph_.ops().size()) - 1);
    send.type = "send";
    send.rows = e.sparse;
  }
}

Status Builder::AddPserverRecvs() {
  if (n_ != 1) {
    return InvalidArgument("pserver '" + strategy_.placed_node +
                           "' runs its ops on one place, not " +
                           std::to_string(n_));
  }
  for (const PlacedExchange& e : exchanges_) {
    const int recv = graph_.AddOp(SsaOpKind::kReduce, "recv", -1, {0});
    graph_.mutable_op(recv).root = 0;
    graph_.mutable_op(recv).var_names = e.grads;
    graph_.mutable_op(recv).rows = e.sparse;
    std::vector<std::pair<std::string, int>> writes;
    for (const std::string& g : e.grads) writes.emplace_back(g, 0);
    Wire(recv, {}, writes);
  }
  return Status::Ok();
}

void Builder::AddPrefetch(const PlacedPrefetch& p) {
  const std::vector<int> all = AllPlaces();
  // Every place reads its ids and gets the rows all of them read.
  const int op = graph_.AddOp(SsaOpKind::kAllGather, "prefetch", -1, all);
  graph_.mutable_op(op).root = 0;
  // The table, then the ids its lookups read.
  graph_.mutable_op(op).var_names = {p.table};
  std::vector<std::pair<std::string, int>> reads, writes;
  if (strategy_.placed_pserver) {
    reads.emplace_back(p.table, 0);
  } else {
    for (const std::string& id : p.ids) {
      graph_.mutable_op(op).var_names.push_back(id);
      for (int place = 0; place < n_; ++place) reads.emplace_back(id, place);
    }
    for (int place = 0; place < n_; ++place)
      writes.emplace_back(p.table, place);
  }
  Wire(op, reads, writes);
  if (writes.empty()) graph_.AddDummyOutput(op);
}

void Builder::AddPlacedBroadcasts() {
  if (!placed_) return;
  const bool pserver = strategy_.placed_pserver;
  for (const PlacedExchange& e : exchanges_) {
    if (e.prefetched) continue;  // the trainers hold none of the table
    const int op = graph_.AddOp(SsaOpKind::kBroadcast,
                                pserver ? "send" : "recv", -1, AllPlaces());
    graph_.mutable_op(op).root = 0;
    graph_.mutable_op(op).var_names = e.params;
    graph_.mutable_op(op).rows = e.rows_back;
    std::vector<std::pair<std::string, int>> reads, writes;
    for (const std::string& param : e.params) {
      reads.emplace_back(param, 0);
      for (int p = 0; p < n_; ++p) writes.emplace_back(param, p);
    }
    Wire(op, reads, writes);
  }
}

}  // namespace parex::multi_device
