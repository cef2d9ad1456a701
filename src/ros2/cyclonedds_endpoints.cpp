// The cyclonedds middleware's QoS, writers and readers (cyclonedds_endpoints.h).
#include "cyclonedds_endpoints.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "cyclonedds_sertype.h"

namespace netloop {
namespace ros2 {
namespace cyclone {

namespace {

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// How long a reliable write may wait for the readers' acknowledgements when the writer's
/// unacknowledged data exceeds Cyclone's WhcHigh: as long as it takes, as rmw_cyclonedds_cpp sets
/// it, so that a large reliable sample slows the publisher down as it does a ROS 2 node. A reader
/// that goes away stops counting when its lease expires (10 s by default).
constexpr dds_duration_t kMaxBlocking = DDS_INFINITY;

}  // namespace

std::string ddsError(dds_return_t rc) { return std::string(dds_strretcode(rc)) + " (" + std::to_string(rc) + ")"; }

dds_qos_t* makeQos(const Qos& q) {
  if (q.depth < 1) throw std::invalid_argument("QoS depth " + std::to_string(q.depth) + " must be at least 1");
  dds_qos_t* qos = dds_create_qos();
  dds_qset_reliability(qos, q.reliability == Reliability::Reliable ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT,
                       kMaxBlocking);
  dds_qset_durability(qos, q.durability == Durability::TransientLocal ? DDS_DURABILITY_TRANSIENT_LOCAL
                                                                      : DDS_DURABILITY_VOLATILE);
  dds_qset_history(qos, DDS_HISTORY_KEEP_LAST, q.depth);
  if (q.durability == Durability::TransientLocal)
    dds_qset_durability_service(qos, 0, DDS_HISTORY_KEEP_LAST, q.depth, DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED,
                                DDS_LENGTH_UNLIMITED);
  return qos;
}

// ---- writer -------------------------------------------------------------------------------

CyclonePublisher::CyclonePublisher(dds_entity_t writer, const ddsi_sertype* type, std::shared_ptr<Counters> counters,
                                   std::string topic)
    : writer_(writer), type_(type), counters_(std::move(counters)), topic_(std::move(topic)) {
  stats_ = dds_create_statistics(writer_);
}

CyclonePublisher::~CyclonePublisher() {
  if (stats_) {
    int64_t rexmit = 0, throttles = 0;
    read(&rexmit, &throttles);
    std::lock_guard<std::mutex> lock(counters_->mutex);
    counters_->rexmit_bytes += rexmit;
    counters_->throttles += throttles;
    dds_delete_statistics(stats_);
  }
  dds_delete(writer_);
}

void CyclonePublisher::publish(const std::vector<uint8_t>& cdr) {
  CdrSerdata* d = newSerdata(type_, SDK_DATA);
  d->bytes = cdr;
  dds_return_t rc = dds_writecdr(writer_, d);  // takes the reference
  if (rc < 0) {
    int64_t n = ++counters_->write_failures;
    if (n <= 5 || (n & (n - 1)) == 0)
      fprintf(stderr, "netloop cyclonedds: write on %s failed: %s (%lld failures so far)\n", topic_.c_str(),
              ddsError(rc).c_str(), static_cast<long long>(n));
    return;
  }
  ++counters_->sent;
}

size_t CyclonePublisher::matched() const {
  dds_publication_matched_status_t st;
  if (dds_get_publication_matched_status(writer_, &st) < 0) return 0;
  return st.current_count;
}

void CyclonePublisher::read(int64_t* rexmit_bytes, int64_t* throttles) const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  if (!stats_ || dds_refresh_statistics(stats_) < 0) return;
  if (const dds_stat_keyvalue* kv = dds_lookup_statistic(stats_, "rexmit_bytes")) *rexmit_bytes += kv->u.u64;
  if (const dds_stat_keyvalue* kv = dds_lookup_statistic(stats_, "throttle_count")) *throttles += kv->u.u32;
}

// ---- reader -------------------------------------------------------------------------------

void onDataAvailable(dds_entity_t reader, void* arg) {
  auto* ctx = static_cast<ReaderContext*>(arg);
  constexpr uint32_t kBatch = 16;
  ddsi_serdata* samples[kBatch];
  dds_sample_info_t infos[kBatch];
  for (;;) {
    dds_return_t n = dds_takecdr(reader, samples, kBatch, infos, DDS_ANY_STATE);
    if (n <= 0) break;
    int64_t now = wallNs();
    for (int i = 0; i < n; ++i) {
      if (infos[i].valid_data) {
        const auto& b = static_cast<const CdrSerdata*>(samples[i])->bytes;
        ++ctx->counters->received;
        try {
          ctx->callback(b.data(), b.size(), now);
        } catch (const std::exception& e) {
          fprintf(stderr, "netloop cyclonedds: subscription callback threw: %s\n", e.what());
        }
      }
      ddsi_serdata_unref(samples[i]);
    }
    if (static_cast<uint32_t>(n) < kBatch) break;
  }
}

CycloneSubscription::CycloneSubscription(dds_entity_t reader, std::unique_ptr<ReaderContext> ctx)
    : reader_(reader), ctx_(std::move(ctx)) {}

CycloneSubscription::~CycloneSubscription() {
  int64_t lost = 0, rejected = 0;
  read(&lost, &rejected);
  {
    std::lock_guard<std::mutex> lock(ctx_->counters->mutex);
    ctx_->counters->lost += lost;
    ctx_->counters->rejected += rejected;
  }
  dds_delete(reader_);  // waits for a listener call in progress
}

size_t CycloneSubscription::matched() const {
  dds_subscription_matched_status_t st;
  if (dds_get_subscription_matched_status(reader_, &st) < 0) return 0;
  return st.current_count;
}

void CycloneSubscription::read(int64_t* lost, int64_t* rejected) const {
  dds_sample_lost_status_t l;
  if (dds_get_sample_lost_status(reader_, &l) == 0) *lost += l.total_count;
  dds_sample_rejected_status_t r;
  if (dds_get_sample_rejected_status(reader_, &r) == 0) *rejected += r.total_count;
}

}  // namespace cyclone
}  // namespace ros2
}  // namespace netloop
