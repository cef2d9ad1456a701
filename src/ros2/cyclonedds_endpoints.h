// Private to the cyclonedds middleware: its QoS, its writers (CyclonePublisher) and readers
// (CycloneSubscription, fed by a listener), and the counters they share with their participant
// (cyclonedds.cpp), which creates them and sums their statistics.
#pragma once

#include <dds/dds.h>
#include <dds/ddsc/dds_statistics.h>
#include <dds/ddsi/ddsi_sertype.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "netloop/ros2/middleware.h"

namespace netloop {
namespace ros2 {
namespace cyclone {

/// Cyclone's text for a return code, with the code: "Bad parameter (-3)".
std::string ddsError(dds_return_t rc);

/// The DDS QoS of a ROS 2 profile (the caller deletes it). Throws std::invalid_argument for a
/// depth below 1.
dds_qos_t* makeQos(const Qos& q);

/// A participant's sample counts, and the totals of its endpoints already deleted.
struct Counters {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> received{0};
  std::atomic<int64_t> write_failures{0};
  // Totals of endpoints already deleted.
  std::mutex mutex;
  int64_t rexmit_bytes = 0, throttles = 0, lost = 0, rejected = 0;
  bool any_writer = false, any_reader = false;
};

/// One writer: publish() hands the CDR bytes to dds_writecdr as they are.
class CyclonePublisher : public Publisher {
 public:
  CyclonePublisher(dds_entity_t writer, const ddsi_sertype* type, std::shared_ptr<Counters> counters,
                   std::string topic);
  /// Adds the writer's statistics to the participant's totals, then deletes the writer.
  ~CyclonePublisher() override;

  void publish(const std::vector<uint8_t>& cdr) override;
  size_t matched() const override;
  /// Adds this writer's retransmitted bytes and throttle events so far.
  void read(int64_t* rexmit_bytes, int64_t* throttles) const;

 private:
  dds_entity_t writer_;
  const ddsi_sertype* type_;
  std::shared_ptr<Counters> counters_;
  std::string topic_;
  dds_statistics* stats_ = nullptr;
  mutable std::mutex stats_mutex_;
};

/// What a reader's listener needs: the subscription's callback and the participant's counters.
struct ReaderContext {
  SampleCallback callback;
  std::shared_ptr<Counters> counters;
};

/// The reader's data-available listener (`arg` is its ReaderContext): takes the samples as CDR
/// bytes and hands each to the callback with the wall-clock time of taking.
void onDataAvailable(dds_entity_t reader, void* arg);

/// One reader, created with onDataAvailable as its listener.
class CycloneSubscription : public Subscription {
 public:
  CycloneSubscription(dds_entity_t reader, std::unique_ptr<ReaderContext> ctx);
  /// Adds the reader's lost and rejected samples to the participant's totals, then deletes the
  /// reader (which waits for a listener call in progress).
  ~CycloneSubscription() override;

  size_t matched() const override;
  /// Adds this reader's lost and rejected samples so far.
  void read(int64_t* lost, int64_t* rejected) const;

 private:
  dds_entity_t reader_;
  std::unique_ptr<ReaderContext> ctx_;
};

}  // namespace cyclone
}  // namespace ros2
}  // namespace netloop
