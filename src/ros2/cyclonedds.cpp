// Eclipse Cyclone DDS 0.10 as a netloop middleware.
//
// Samples are opaque CDR: a sertype/serdata pair of our own carries the bytes as they are (the
// encapsulation header included) so that the topic is registered under ROS 2's type name
// (ddsTypeName) and topic name (ddsTopicName), keyless, exactly as rmw_cyclonedds_cpp registers
// it. Writing is dds_writecdr; reading is a listener (on_data_available) that takes with
// dds_takecdr and hands the bytes to the subscription's callback without deserializing.
#include <dds/dds.h>
#include <dds/ddsc/dds_statistics.h>
#include <dds/ddsi/ddsi_serdata.h>
#include <dds/ddsi/ddsi_sertype.h>
#include <dds/ddsi/q_radmin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "netloop/ros2/middleware.h"
#include "netloop/ros2/names.h"
#include "live_endpoints.h"
#include "registry.h"

namespace netloop {
namespace ros2 {

namespace {

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ddsError(dds_return_t rc) { return std::string(dds_strretcode(rc)) + " (" + std::to_string(rc) + ")"; }

// ---- the opaque CDR sertype / serdata -----------------------------------------------------

/// What dds_write / dds_take would see as a sample, should anyone use them on these topics.
struct RawSample {
  uint8_t* data;
  size_t size;
};

struct CdrSerdata : ddsi_serdata {
  std::vector<uint8_t> bytes;
};

struct CdrSertype : ddsi_sertype {};

extern const ddsi_serdata_ops kSerdataOps;
extern const ddsi_sertype_ops kSertypeOps;

CdrSerdata* newSerdata(const ddsi_sertype* type, ddsi_serdata_kind kind) {
  auto* d = new CdrSerdata();
  ddsi_serdata_init(d, type, kind);
  return d;
}

bool sdEqkey(const ddsi_serdata*, const ddsi_serdata*) { return true; }  // keyless

uint32_t sdSize(const ddsi_serdata* d) { return static_cast<uint32_t>(static_cast<const CdrSerdata*>(d)->bytes.size()); }

void sdFree(ddsi_serdata* d) { delete static_cast<CdrSerdata*>(d); }

ddsi_serdata* sdFromSer(const ddsi_sertype* type, ddsi_serdata_kind kind, const nn_rdata* frag, size_t size) {
  CdrSerdata* d = newSerdata(type, kind);
  d->bytes.resize(size);
  uint32_t off = 0;
  uint8_t* dst = d->bytes.data();
  for (; frag; frag = frag->nextfrag) {
    if (frag->maxp1 > off) {  // a fragment may overlap what earlier ones gave
      const unsigned char* payload = NN_RMSG_PAYLOADOFF(frag->rmsg, NN_RDATA_PAYLOAD_OFF(frag));
      uint32_t end = std::min<uint32_t>(frag->maxp1, static_cast<uint32_t>(size));
      if (end > off) memcpy(dst + off, payload + (off - frag->min), end - off);
      off = frag->maxp1;
    }
  }
  return d;
}

ddsi_serdata* sdFromSerIov(const ddsi_sertype* type, ddsi_serdata_kind kind, ddsrt_msg_iovlen_t niov,
                           const ddsrt_iovec_t* iov, size_t size) {
  CdrSerdata* d = newSerdata(type, kind);
  d->bytes.resize(size);
  size_t off = 0;
  for (ddsrt_msg_iovlen_t i = 0; i < niov && off < size; ++i) {
    size_t n = std::min(static_cast<size_t>(iov[i].iov_len), size - off);
    memcpy(d->bytes.data() + off, iov[i].iov_base, n);
    off += n;
  }
  return d;
}

ddsi_serdata* sdFromKeyhash(const ddsi_sertype* type, const ddsi_keyhash*) { return newSerdata(type, SDK_KEY); }

ddsi_serdata* sdFromSample(const ddsi_sertype* type, ddsi_serdata_kind kind, const void* sample) {
  CdrSerdata* d = newSerdata(type, kind);
  if (kind == SDK_DATA) {
    const auto* s = static_cast<const RawSample*>(sample);
    d->bytes.assign(s->data, s->data + s->size);
  }
  return d;
}

void sdToSer(const ddsi_serdata* d, size_t off, size_t sz, void* buf) {
  const auto& b = static_cast<const CdrSerdata*>(d)->bytes;
  size_t n = off < b.size() ? std::min(sz, b.size() - off) : 0;
  if (n) memcpy(buf, b.data() + off, n);
  if (n < sz) memset(static_cast<uint8_t*>(buf) + n, 0, sz - n);  // alignup4 tail
}

ddsi_serdata* sdToSerRef(const ddsi_serdata* d, size_t off, size_t sz, ddsrt_iovec_t* ref) {
  const auto& b = static_cast<const CdrSerdata*>(d)->bytes;
  ref->iov_base = const_cast<uint8_t*>(b.data()) + off;
  ref->iov_len = static_cast<ddsrt_iov_len_t>(sz);
  return ddsi_serdata_ref(d);
}

void sdToSerUnref(ddsi_serdata* d, const ddsrt_iovec_t*) { ddsi_serdata_unref(d); }

bool sdToSample(const ddsi_serdata* d, void* sample, void**, void*) {
  const auto& b = static_cast<const CdrSerdata*>(d)->bytes;
  auto* s = static_cast<RawSample*>(sample);
  free(s->data);
  s->data = static_cast<uint8_t*>(malloc(b.size() ? b.size() : 1));
  if (!s->data) return false;
  if (!b.empty()) memcpy(s->data, b.data(), b.size());
  s->size = b.size();
  return true;
}

ddsi_serdata* sdToUntyped(const ddsi_serdata* d) {
  CdrSerdata* u = newSerdata(d->type, SDK_KEY);
  u->type = nullptr;
  return u;
}

bool sdUntypedToSample(const ddsi_sertype*, const ddsi_serdata*, void*, void**, void*) { return true; }

size_t sdPrint(const ddsi_sertype*, const ddsi_serdata* d, char* buf, size_t size) {
  return static_cast<size_t>(
      snprintf(buf, size, "(%zu bytes of CDR)", static_cast<const CdrSerdata*>(d)->bytes.size()));
}

void sdGetKeyhash(const ddsi_serdata*, ddsi_keyhash* buf, bool) { memset(buf, 0, sizeof(*buf)); }

const ddsi_serdata_ops kSerdataOps = {
    sdEqkey,     sdSize,      sdFromSer,     sdFromSerIov,     sdFromKeyhash, sdFromSample,
    sdToSer,     sdToSerRef,  sdToSerUnref,  sdToSample,       sdToUntyped,   sdUntypedToSample,
    sdFree,      sdPrint,     sdGetKeyhash,
#ifdef DDS_HAS_SHM
    nullptr,     nullptr,
#endif
};

void stFree(ddsi_sertype* t) {
  ddsi_sertype_fini(t);
  delete static_cast<CdrSertype*>(t);
}
void stZeroSamples(const ddsi_sertype*, void* samples, size_t count) {
  memset(samples, 0, count * sizeof(RawSample));
}
void stReallocSamples(void** ptrs, const ddsi_sertype*, void* old, size_t oldcount, size_t count) {
  auto* arr = static_cast<RawSample*>(realloc(old, (count ? count : 1) * sizeof(RawSample)));
  if (count > oldcount) memset(arr + oldcount, 0, (count - oldcount) * sizeof(RawSample));
  for (size_t i = 0; i < count; ++i) ptrs[i] = &arr[i];
}
void stFreeSamples(const ddsi_sertype*, void** ptrs, size_t count, dds_free_op_t op) {
  if (count == 0) return;
  if (op & DDS_FREE_CONTENTS_BIT)
    for (size_t i = 0; i < count; ++i) {
      auto* s = static_cast<RawSample*>(ptrs[i]);
      free(s->data);
      s->data = nullptr;
      s->size = 0;
    }
  if (op & DDS_FREE_ALL_BIT) free(ptrs[0]);
}
bool stEqual(const ddsi_sertype*, const ddsi_sertype*) { return true; }  // same name and ops: same type
uint32_t stHash(const ddsi_sertype*) { return 0x6e6c7232u; }
size_t stSerializedSize(const ddsi_sertype*, const void* sample) { return static_cast<const RawSample*>(sample)->size; }
bool stSerializeInto(const ddsi_sertype*, const void* sample, void* dst, size_t dst_size) {
  const auto* s = static_cast<const RawSample*>(sample);
  if (dst_size < s->size) return false;
  memcpy(dst, s->data, s->size);
  return true;
}

const ddsi_sertype_ops kSertypeOps = {
    ddsi_sertype_v0, nullptr, stFree,  stZeroSamples, stReallocSamples, stFreeSamples, stEqual,          stHash,
    nullptr,         nullptr, nullptr, nullptr,       stSerializedSize, stSerializeInto,
};

// ---- QoS ----------------------------------------------------------------------------------

/// How long a reliable write may wait for the readers' acknowledgements when the writer's
/// unacknowledged data exceeds Cyclone's WhcHigh: as long as it takes, as rmw_cyclonedds_cpp sets
/// it, so that a large reliable sample slows the publisher down as it does a ROS 2 node. A reader
/// that goes away stops counting when its lease expires (10 s by default).
constexpr dds_duration_t kMaxBlocking = DDS_INFINITY;

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

// ---- domains: one per domain id per process, created with the config when one is given ----

struct DomainRegistry {
  std::mutex mutex;
  std::map<int, std::pair<dds_entity_t, int>> domains;  // id -> (domain entity or 0, users)
};
DomainRegistry& domains() {
  static DomainRegistry r;
  return r;
}

void acquireDomain(int id, const std::string& config_file) {
  DomainRegistry& r = domains();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.domains.find(id);
  if (it != r.domains.end()) {
    ++it->second.second;
    return;
  }
  dds_entity_t dom = 0;
  if (!config_file.empty()) {
    FILE* f = fopen(config_file.c_str(), "r");
    if (!f) throw std::runtime_error("cyclonedds: cannot read the configuration file " + config_file);
    fclose(f);
    std::string uri = "file://" + config_file;
    dom = dds_create_domain(static_cast<dds_domainid_t>(id), uri.c_str());
    if (dom == DDS_RETCODE_PRECONDITION_NOT_MET) {
      dom = 0;  // the domain exists already (created by someone else in this process): join it
    } else if (dom < 0) {
      throw std::runtime_error("cyclonedds: cannot create domain " + std::to_string(id) + " with " + config_file +
                               ": " + ddsError(dom));
    }
  }
  r.domains[id] = {dom, 1};
}

void releaseDomain(int id) {
  DomainRegistry& r = domains();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.domains.find(id);
  if (it == r.domains.end()) return;
  if (--it->second.second == 0) {
    if (it->second.first > 0) dds_delete(it->second.first);
    r.domains.erase(it);
  }
}

// ---- participant, publisher, subscription ---------------------------------------------------

struct Counters {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> received{0};
  std::atomic<int64_t> write_failures{0};
  // Totals of endpoints already deleted.
  std::mutex mutex;
  int64_t rexmit_bytes = 0, throttles = 0, lost = 0, rejected = 0;
  bool any_writer = false, any_reader = false;
};

class CyclonePublisher : public Publisher {
 public:
  CyclonePublisher(dds_entity_t writer, const ddsi_sertype* type, std::shared_ptr<Counters> counters,
                   std::string topic)
      : writer_(writer), type_(type), counters_(std::move(counters)), topic_(std::move(topic)) {
    stats_ = dds_create_statistics(writer_);
  }
  ~CyclonePublisher() override {
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

  void publish(const std::vector<uint8_t>& cdr) override {
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

  size_t matched() const override {
    dds_publication_matched_status_t st;
    if (dds_get_publication_matched_status(writer_, &st) < 0) return 0;
    return st.current_count;
  }

  void read(int64_t* rexmit_bytes, int64_t* throttles) const {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    if (!stats_ || dds_refresh_statistics(stats_) < 0) return;
    if (const dds_stat_keyvalue* kv = dds_lookup_statistic(stats_, "rexmit_bytes")) *rexmit_bytes += kv->u.u64;
    if (const dds_stat_keyvalue* kv = dds_lookup_statistic(stats_, "throttle_count")) *throttles += kv->u.u32;
  }

 private:
  dds_entity_t writer_;
  const ddsi_sertype* type_;
  std::shared_ptr<Counters> counters_;
  std::string topic_;
  dds_statistics* stats_ = nullptr;
  mutable std::mutex stats_mutex_;
};

struct ReaderContext {
  SampleCallback callback;
  std::shared_ptr<Counters> counters;
};

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

class CycloneSubscription : public Subscription {
 public:
  CycloneSubscription(dds_entity_t reader, std::unique_ptr<ReaderContext> ctx)
      : reader_(reader), ctx_(std::move(ctx)) {}
  ~CycloneSubscription() override {
    int64_t lost = 0, rejected = 0;
    read(&lost, &rejected);
    {
      std::lock_guard<std::mutex> lock(ctx_->counters->mutex);
      ctx_->counters->lost += lost;
      ctx_->counters->rejected += rejected;
    }
    dds_delete(reader_);  // waits for a listener call in progress
  }
  size_t matched() const override {
    dds_subscription_matched_status_t st;
    if (dds_get_subscription_matched_status(reader_, &st) < 0) return 0;
    return st.current_count;
  }
  void read(int64_t* lost, int64_t* rejected) const {
    dds_sample_lost_status_t l;
    if (dds_get_sample_lost_status(reader_, &l) == 0) *lost += l.total_count;
    dds_sample_rejected_status_t r;
    if (dds_get_sample_rejected_status(reader_, &r) == 0) *rejected += r.total_count;
  }

 private:
  dds_entity_t reader_;
  std::unique_ptr<ReaderContext> ctx_;
};

class CycloneParticipant : public Participant {
 public:
  explicit CycloneParticipant(const ParticipantConfig& config) : domain_id_(config.domain_id) {
    acquireDomain(domain_id_, config.config_file);
    participant_ = dds_create_participant(static_cast<dds_domainid_t>(domain_id_), nullptr, nullptr);
    if (participant_ < 0) {
      releaseDomain(domain_id_);
      throw std::runtime_error("cyclonedds: cannot create a participant on domain " + std::to_string(domain_id_) +
                               (config.config_file.empty() ? std::string() : " (config " + config.config_file + ")") +
                               ": " + ddsError(participant_));
    }
    counters_ = std::make_shared<Counters>();
  }

  ~CycloneParticipant() override {
    // Publishers and subscriptions must be destroyed before their participant.
    dds_delete(participant_);
    releaseDomain(domain_id_);
  }

  std::unique_ptr<Publisher> createPublisher(const std::string& ros_topic, const std::string& ros_type,
                                             const Qos& qos) override {
    const std::string topic_name = ddsTopicName(ros_topic);
    dds_entity_t topic = topic_for(topic_name, ros_type);
    dds_qos_t* q = makeQos(qos);
    dds_qset_writer_data_lifecycle(q, false);
    dds_entity_t writer = dds_create_writer(participant_, topic, q, nullptr);
    dds_delete_qos(q);
    if (writer < 0)
      throw std::runtime_error("cyclonedds: cannot create a writer on " + topic_name + ": " + ddsError(writer));
    const ddsi_sertype* type = sertype_of(topic_name);
    {
      std::lock_guard<std::mutex> lock(counters_->mutex);
      counters_->any_writer = true;
    }
    return std::make_unique<TrackedPublisher<CyclonePublisher>>(
        std::make_unique<CyclonePublisher>(writer, type, counters_, topic_name), &publishers_);
  }

  std::unique_ptr<Subscription> createSubscription(const std::string& ros_topic, const std::string& ros_type,
                                                   const Qos& qos, SampleCallback callback) override {
    const std::string topic_name = ddsTopicName(ros_topic);
    dds_entity_t topic = topic_for(topic_name, ros_type);
    auto ctx = std::make_unique<ReaderContext>();
    ctx->callback = std::move(callback);
    ctx->counters = counters_;
    dds_listener_t* listener = dds_create_listener(ctx.get());
    dds_lset_data_available(listener, onDataAvailable);
    dds_qos_t* q = makeQos(qos);
    dds_entity_t reader = dds_create_reader(participant_, topic, q, listener);
    dds_delete_qos(q);
    dds_delete_listener(listener);
    if (reader < 0)
      throw std::runtime_error("cyclonedds: cannot create a reader on " + topic_name + ": " + ddsError(reader));
    {
      std::lock_guard<std::mutex> lock(counters_->mutex);
      counters_->any_reader = true;
    }
    return std::make_unique<TrackedSubscription<CycloneSubscription>>(
        std::make_unique<CycloneSubscription>(reader, std::move(ctx)), &subscriptions_);
  }

  WireStats stats() const override {
    WireStats w;
    w.samples_sent = counters_->sent;
    w.samples_received = counters_->received;
    int64_t rexmit = 0, throttles = 0, lost = 0, rejected = 0;
    bool any_writer, any_reader;
    {
      std::lock_guard<std::mutex> lock(counters_->mutex);
      rexmit = counters_->rexmit_bytes;
      throttles = counters_->throttles;
      lost = counters_->lost;
      rejected = counters_->rejected;
      any_writer = counters_->any_writer;
      any_reader = counters_->any_reader;
    }
    publishers_.forEach([&](const CyclonePublisher& p) { p.read(&rexmit, &throttles); });
    subscriptions_.forEach([&](const CycloneSubscription& s) { s.read(&lost, &rejected); });
    if (any_writer) {
      w.retransmit_bytes = rexmit;
      w.throttles = throttles;
    }
    if (any_reader) {
      w.samples_lost = lost;
      w.samples_rejected = rejected;
    }
    return w;
  }

  std::string middleware() const override { return "cyclonedds"; }

 private:
  dds_entity_t topic_for(const std::string& topic_name, const std::string& ros_type) {
    const std::string type_name = ddsTypeName(ros_type);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = topics_.find(topic_name);
    if (it != topics_.end()) {
      if (it->second.second != type_name)
        throw std::invalid_argument("cyclonedds: topic " + topic_name + " has type " + it->second.second +
                                    " in this participant, not " + type_name);
      return it->second.first;
    }
    auto* st = new CdrSertype();
    ddsi_sertype_init(st, type_name.c_str(), &kSertypeOps, &kSerdataOps, true /* keyless */);
    ddsi_sertype* stp = st;
    dds_entity_t topic = dds_create_topic_sertype(participant_, topic_name.c_str(), &stp, nullptr, nullptr, nullptr);
    if (topic < 0) {
      ddsi_sertype_fini(st);
      delete st;
      throw std::runtime_error("cyclonedds: cannot create topic " + topic_name + " of type " + type_name + ": " +
                               ddsError(topic));
    }
    topics_[topic_name] = {topic, type_name};
    sertypes_[topic_name] = stp;  // the sertype the topic uses (Cyclone may have swapped in an equal one)
    return topic;
  }

  const ddsi_sertype* sertype_of(const std::string& topic_name) {
    std::lock_guard<std::mutex> lock(mutex_);
    return sertypes_.at(topic_name);
  }

  int domain_id_;
  dds_entity_t participant_ = 0;
  std::shared_ptr<Counters> counters_;
  mutable std::mutex mutex_;
  std::map<std::string, std::pair<dds_entity_t, std::string>> topics_;
  std::map<std::string, const ddsi_sertype*> sertypes_;
  LiveSet<CyclonePublisher> publishers_;
  LiveSet<CycloneSubscription> subscriptions_;
};

[[maybe_unused]] const bool kRegistered = registerMiddleware(
    "cyclonedds", [](const ParticipantConfig& c) -> std::unique_ptr<Participant> {
      return std::make_unique<CycloneParticipant>(c);
    });

}  // namespace

}  // namespace ros2
}  // namespace netloop
