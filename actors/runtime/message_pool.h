// MessagePool: sends the runtime's per-step messages
// (actors/runtime/messages.h) without a heap allocation once warm.
//
// CAF 0.17 allocates a mailbox element per send (make_mailbox_element news a
// mailbox_element_vals). A mailbox element is `memory_managed`: CAF disposes
// of it through its virtual request_deletion, which a subclass may override.
// The pool's elements are such a subclass: disposing returns the element to
// its free list, and the next send of that message type reuses it. So a
// steady step costs no allocation however many messages it sends (the
// allocation test, tests/actors/steady_step_allocation_test.cc). Written by
// hand because CAF 0.17 has no pooling of its own.
//
// The elements are anonymous (no sender): the receivers never answer. They
// carry the sending worker (`self->context()`), which the resume-here policy
// uses to run the receiver on the same worker.
//
// Thread-safety: Send may be called from any thread. The pool must outlive
// every actor its messages can reach (elements return to it when an actor's
// mailbox is cleared).
#pragma once

#include <algorithm>
#include <caf/abstract_actor.hpp>
#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/detail/tuple_vals.hpp>
#include <caf/local_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_message.hpp>
#include <caf/type_erased_tuple.hpp>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "actors/runtime/messages.h"
#include "base/spin_lock.h"

namespace parex {

template <class T>
class FreeList;

// A mailbox element holding one T that returns to its FreeList when CAF
// disposes of it.
template <class T>
class PooledElement final
    : public caf::mailbox_element,
      public caf::detail::tuple_vals_impl<caf::type_erased_tuple, T> {
 public:
  explicit PooledElement(FreeList<T>* home)
      : caf::detail::tuple_vals_impl<caf::type_erased_tuple, T>(T{}),
        home_(home) {}
  ~PooledElement() override = default;

  T& value() { return std::get<0>(this->data()); }

  caf::type_erased_tuple& content() override { return *this; }
  const caf::type_erased_tuple& content() const override { return *this; }
  caf::message move_content_to_message() override {
    return caf::make_message(std::get<0>(this->data()));
  }
  caf::message copy_content_to_message() const override {
    return caf::make_message(std::get<0>(this->data()));
  }
  void request_deletion(bool) const noexcept override {
    home_->Release(const_cast<PooledElement*>(this));
  }

 private:
  FreeList<T>* home_;
};

// The shard of the calling thread's free lists: threads take shards in turn
// as they first send or dispose of a message.
int ThisThreadShard(int num_shards);

// Free elements of one message type, sharded by thread: a thread takes from
// and returns to its own shard, a line no other thread writes while the
// threads keep to their shards, so a message costs no cache-line transfer
// for its element's bookkeeping (one shared list cost the layered DAG of
// bench/runtime_bench a transfer per send and per disposal). A thread whose
// shard is empty takes up to half of another's; when every shard is empty a
// new element is made.
//
// Invariant: every shard's vector has capacity for every element there is
// (grown, under grow_mu_, before an element is added), so returning one
// never allocates.
template <class T>
class FreeList {
 public:
  FreeList() = default;
  FreeList(const FreeList&) = delete;
  FreeList& operator=(const FreeList&) = delete;

  PooledElement<T>* Acquire() {
    Shard& own = shards_[ThisThreadShard(kShards)];
    {
      std::lock_guard<SpinLock> lock(own.mu);
      if (!own.free.empty()) return Pop(own);
    }
    if (PooledElement<T>* e = TakeFromOthers(own)) return e;
    std::lock_guard<std::mutex> growing(grow_mu_);
    return Add(nullptr);
  }

  // Makes `n` elements at once, spread over the shards, so that no send
  // allocates until more than `n` of them are in flight.
  void Reserve(size_t n) {
    std::lock_guard<std::mutex> growing(grow_mu_);
    for (size_t i = 0; i < n; ++i) Add(&shards_[i % kShards]);
  }

  // The elements made so far.
  size_t made() {
    std::lock_guard<std::mutex> growing(grow_mu_);
    return all_.size();
  }

  void Release(PooledElement<T>* e) {
    e->sender = nullptr;
    e->next = nullptr;
    Shard& own = shards_[ThisThreadShard(kShards)];
    std::lock_guard<SpinLock> lock(own.mu);
    own.free.push_back(e);  // capacity reserved: never allocates
  }

 private:
  static constexpr int kShards = 8;
  // At most this many elements move from another shard at once.
  static constexpr size_t kMaxTake = 32;

  struct alignas(64) Shard {
    SpinLock mu;  // held for a few ns: base/spin_lock.h
    std::vector<PooledElement<T>*> free;
  };

  static PooledElement<T>* Pop(Shard& shard) {
    PooledElement<T>* e = shard.free.back();
    shard.free.pop_back();
    return e;
  }

  // Moves up to half of the first non-empty other shard into `own` (never
  // holding two shards' locks) and returns one of them; null if all are
  // empty.
  PooledElement<T>* TakeFromOthers(Shard& own) {
    PooledElement<T>* taken[kMaxTake];
    size_t n = 0;
    for (Shard& other : shards_) {
      if (&other == &own) continue;
      std::lock_guard<SpinLock> lock(other.mu);
      n = std::min(kMaxTake, (other.free.size() + 1) / 2);
      for (size_t i = 0; i < n; ++i) taken[i] = Pop(other);
      if (n > 0) break;
    }
    if (n == 0) return nullptr;
    if (n > 1) {
      std::lock_guard<SpinLock> lock(own.mu);
      own.free.insert(own.free.end(), taken + 1, taken + n);
    }
    return taken[0];
  }

  // Makes one more element: put into `shard`, or returned when null.
  // REQUIRES: grow_mu_ held.
  PooledElement<T>* Add(Shard* shard) {
    all_.push_back(std::make_unique<PooledElement<T>>(this));
    for (Shard& s : shards_) {
      std::lock_guard<SpinLock> lock(s.mu);
      if (s.free.capacity() < all_.size()) {
        s.free.reserve(std::max<size_t>(64, 2 * all_.size()));
      }
    }
    PooledElement<T>* e = all_.back().get();
    if (shard == nullptr) return e;
    std::lock_guard<SpinLock> lock(shard->mu);
    shard->free.push_back(e);
    return nullptr;
  }

  Shard shards_[kShards];
  std::mutex grow_mu_;
  std::vector<std::unique_ptr<PooledElement<T>>> all_;  // guarded by grow_mu_
};

class MessagePool {
 public:
  // Makes `n` elements for messages of type T up front (the most a step can
  // have in flight), so that even the first steps allocate none.
  template <class T>
  void Reserve(size_t n) {
    std::get<FreeList<T>>(lists_).Reserve(n);
  }

  // Sends `msg` to `to`; `self` null: from outside any actor.
  template <class T>
  void Send(caf::local_actor* self, const caf::actor& to, const T& msg) {
    SendVia(self != nullptr ? self->context() : nullptr, to, msg);
  }

  // Sends `msg` to `to` from execution unit `unit`: an actor the message
  // makes runnable goes to `unit` (null: to the scheduler's queue).
  template <class T>
  void SendVia(caf::execution_unit* unit, const caf::actor& to, const T& msg) {
    PooledElement<T>* e = std::get<FreeList<T>>(lists_).Acquire();
    e->value() = msg;
    caf::actor_cast<caf::abstract_actor*>(to)->enqueue(
        caf::mailbox_element_ptr{e}, unit);
  }

 private:
  std::tuple<FreeList<RunNode>, FreeList<InputReady>, FreeList<StreamWork>,
             FreeList<StepStart>, FreeList<StepDone>>
      lists_;
};

}  // namespace parex
