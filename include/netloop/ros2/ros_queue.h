// Middleware samples handed to roscpp's global callback queue, so a node's own event loop
// (ros::spin, or serviceUntil's callAvailable) runs them on its thread, as it runs the
// callbacks of its roscpp subscriptions.
//
// A middleware delivers each sample on one of its own threads (middleware.h). RosQueueInbox
// copies the CDR bytes into a bounded inbox and adds one ros::CallbackInterface per sample to
// the callback queue; when roscpp calls it, the oldest sample of the inbox is taken and the
// handler runs with the reception time read then (wall clock, ns), exactly where roscpp's own
// subscription callbacks read it. This is roscpp's SubscriptionQueue design: the inbox holds
// at most `depth` samples, a sample arriving to a full inbox makes the oldest one go
// (counted in drops(), what roscpp calls the subscriber queue's drops), and a callback that
// finds the inbox empty does nothing.
//
// Thread safety: push() from any thread; the handler runs on the thread that serves the queue.
// Destroy the middleware subscription that pushes before the inbox; callbacks still in the
// queue hold only a weak reference and are removed from the queue with the inbox.
#pragma once

#include <ros/callback_queue.h>
#include <ros/callback_queue_interface.h>
#include <ros/ros.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace netloop {
namespace ros2 {

/// Wall clock [ns since the Unix epoch], the clock of the nodes' records.
inline int64_t wallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class RosQueueInbox : public std::enable_shared_from_this<RosQueueInbox> {
 public:
  /// Runs on the queue's thread: the sample's CDR bytes and the time the callback ran [ns].
  using Handler = std::function<void(const uint8_t* cdr, size_t len, int64_t recv_ns)>;

  /// `depth` >= 1 samples held before the oldest goes; `queue` null = roscpp's global queue.
  static std::shared_ptr<RosQueueInbox> create(Handler handler, size_t depth, ros::CallbackQueue* queue = nullptr) {
    return std::shared_ptr<RosQueueInbox>(
        new RosQueueInbox(std::move(handler), depth ? depth : 1, queue ? queue : ros::getGlobalCallbackQueue()));
  }

  ~RosQueueInbox() { queue_->removeByID(ownerId()); }
  RosQueueInbox(const RosQueueInbox&) = delete;
  RosQueueInbox& operator=(const RosQueueInbox&) = delete;

  /// Takes a copy of one sample (any thread) and schedules its handler on the queue.
  void push(const uint8_t* cdr, size_t len) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (samples_.size() >= depth_) {
        samples_.pop_front();
        ++drops_;
      }
      samples_.emplace_back(cdr, cdr + len);
      ++pushed_;
    }
    queue_->addCallback(boost::make_shared<Call>(weak_from_this()), ownerId());
  }

  /// A middleware SampleCallback that pushes into this inbox (holds it weakly).
  std::function<void(const uint8_t*, size_t, int64_t)> sampleCallback() {
    std::weak_ptr<RosQueueInbox> weak = weak_from_this();
    return [weak](const uint8_t* cdr, size_t len, int64_t) {
      if (auto self = weak.lock()) self->push(cdr, len);
    };
  }

  /// Samples pushed so far (what the middleware delivered).
  uint64_t pushed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pushed_;
  }
  /// Samples that went because the inbox was full.
  uint64_t drops() const {
    std::lock_guard<std::mutex> lock(mu_);
    return drops_;
  }
  /// Samples waiting now.
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_.size();
  }

 private:
  class Call : public ros::CallbackInterface {
   public:
    explicit Call(std::weak_ptr<RosQueueInbox> inbox) : inbox_(std::move(inbox)) {}
    CallResult call() override {
      if (auto inbox = inbox_.lock()) inbox->runOne();
      return Success;
    }

   private:
    std::weak_ptr<RosQueueInbox> inbox_;
  };

  RosQueueInbox(Handler handler, size_t depth, ros::CallbackQueue* queue)
      : handler_(std::move(handler)), depth_(depth), queue_(queue) {}

  uint64_t ownerId() const { return reinterpret_cast<uint64_t>(this); }

  void runOne() {
    std::vector<uint8_t> sample;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (samples_.empty()) return;  // it went to make room for a newer one
      sample.swap(samples_.front());
      samples_.pop_front();
    }
    handler_(sample.data(), sample.size(), wallClockNs());
  }

  Handler handler_;
  const size_t depth_;
  ros::CallbackQueue* queue_;
  mutable std::mutex mu_;
  std::deque<std::vector<uint8_t>> samples_;
  uint64_t pushed_ = 0, drops_ = 0;
};

}  // namespace ros2
}  // namespace netloop
