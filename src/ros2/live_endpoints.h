// Private to libnetloop_ros2: a participant's live publishers and subscriptions, so that its
// stats() can read each one's counters, and the handles it gives out, which take their endpoint
// off the list before destroying it.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "netloop/ros2/middleware.h"

namespace netloop {
namespace ros2 {

template <class Endpoint>
class LiveSet {
 public:
  void add(Endpoint* e) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(e);
  }
  void remove(Endpoint* e) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(e);
  }
  /// Calls f(endpoint) for each live one, under the set's lock (an endpoint is not destroyed meanwhile).
  template <class F>
  void forEach(F f) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Endpoint* e : live_) f(*e);
  }

 private:
  mutable std::mutex mutex_;
  std::set<Endpoint*> live_;
};

/// The Publisher a participant hands out for its backend publisher `P`.
template <class P>
class TrackedPublisher : public Publisher {
 public:
  TrackedPublisher(std::unique_ptr<P> p, LiveSet<P>* live) : p_(std::move(p)), live_(live) { live_->add(p_.get()); }
  ~TrackedPublisher() override {
    live_->remove(p_.get());
    p_.reset();
  }
  void publish(const std::vector<uint8_t>& cdr) override { p_->publish(cdr); }
  size_t matched() const override { return p_->matched(); }

 private:
  std::unique_ptr<P> p_;
  LiveSet<P>* live_;
};

/// The Subscription a participant hands out for its backend subscription `S`.
template <class S>
class TrackedSubscription : public Subscription {
 public:
  TrackedSubscription(std::unique_ptr<S> s, LiveSet<S>* live) : s_(std::move(s)), live_(live) {
    live_->add(s_.get());
  }
  ~TrackedSubscription() override {
    live_->remove(s_.get());
    s_.reset();
  }
  size_t matched() const override { return s_->matched(); }

 private:
  std::unique_ptr<S> s_;
  LiveSet<S>* live_;
};

}  // namespace ros2
}  // namespace netloop
