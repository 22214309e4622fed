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

template <class T>
class FreeList {
 public:
  FreeList() = default;
  FreeList(const FreeList&) = delete;
  FreeList& operator=(const FreeList&) = delete;
  ~FreeList() {
    for (PooledElement<T>* e : all_) delete e;
  }

  PooledElement<T>* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      all_.push_back(new PooledElement<T>(this));
      free_.reserve(all_.capacity());
      return all_.back();
    }
    PooledElement<T>* e = free_.back();
    free_.pop_back();
    return e;
  }

  // Makes `n` elements at once, so that no send allocates until more than
  // `n` of them are in flight.
  void Reserve(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    all_.reserve(all_.size() + n);
    free_.reserve(all_.capacity());
    for (size_t i = 0; i < n; ++i) {
      all_.push_back(new PooledElement<T>(this));
      free_.push_back(all_.back());
    }
  }

  void Release(PooledElement<T>* e) {
    e->sender = nullptr;
    e->next = nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(e);  // capacity reserved: never allocates
  }

 private:
  std::mutex mu_;
  std::vector<PooledElement<T>*> all_;   // owned
  std::vector<PooledElement<T>*> free_;  // capacity >= all_.size()
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
    PooledElement<T>* e = std::get<FreeList<T>>(lists_).Acquire();
    e->value() = msg;
    caf::actor_cast<caf::abstract_actor*>(to)->enqueue(
        caf::mailbox_element_ptr{e},
        self != nullptr ? self->context() : nullptr);
  }

 private:
  std::tuple<FreeList<RunNode>, FreeList<InputReady>, FreeList<StreamWork>,
             FreeList<StepStart>, FreeList<StepDone>>
      lists_;
};

}  // namespace parex
