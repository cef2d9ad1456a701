// eProsima Fast DDS 2.9 as a netloop middleware.
//
// Samples are opaque CDR: a TopicDataType of our own copies the bytes (encapsulation header
// included) into and out of the SerializedPayload_t, and is registered under ROS 2's type name
// (ddsTypeName) for the topic ddsTopicName(topic), keyless, as rmw_fastrtps_cpp does. QoS comes
// from the XML profiles file's defaults (config_file, loaded before the participant is created)
// with ROS 2's reliability, durability and history depth set on top, and what rmw_fastrtps_cpp
// (Jazzy) sets on every writer and reader unless told to take the XML's: synchronous
// publishing, history memory PREALLOCATED_WITH_REALLOC (samples of any size fit), data sharing
// off. Heartbeat period, NACK delays and the RTPS message size stay Fast DDS's defaults unless
// the profiles file sets them (netloop.ros2.config: message_size).
//
// Wire statistics: samples lost / rejected from the readers' statuses. Fast DDS's statistics
// module (built in Debian's 2.9) can also count retransmitted DATA, HEARTBEATs and ACKNACKs, but
// only through statistics DataWriters that are announced in discovery and that every other
// participant's statistics readers would receive over the network, which a ROS 2 node does not
// do: so they are read only when NETLOOP_FASTDDS_STATISTICS=1 (else -1 as "not exposed").
#include <fastdds/dds/core/status/SampleRejectedStatus.hpp>
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/publisher/qos/DataWriterQos.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/subscriber/qos/DataReaderQos.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/common/SerializedPayload.h>
#ifdef FASTDDS_STATISTICS
#include <fastdds/statistics/dds/domain/DomainParticipant.hpp>
#include <fastdds/statistics/dds/publisher/qos/DataWriterQos.hpp>
#include <fastdds/statistics/topic_names.hpp>
#endif

#include <array>
#include <cstdlib>

#include <atomic>
#include <chrono>
#include <cstdio>
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

namespace fdds = eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::SerializedPayload_t;

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A sample: its CDR bytes, encapsulation header included. A sample being written points at the
/// caller's bytes instead (write() serializes before it returns, so they are copied once).
struct OpaqueSample {
  std::vector<uint8_t> bytes;
  const uint8_t* ext = nullptr;
  size_t ext_size = 0;
  const uint8_t* data() const { return ext ? ext : bytes.data(); }
  size_t size() const { return ext ? ext_size : bytes.size(); }
};

class OpaqueType : public fdds::TopicDataType {
 public:
  explicit OpaqueType(const std::string& name) {
    setName(name.c_str());
    m_typeSize = 4 + 1024;  // initial payload size; PREALLOCATED_WITH_REALLOC grows it
    m_isGetKeyDefined = false;
    auto_fill_type_object(false);
    auto_fill_type_information(false);
  }
  bool serialize(void* data, SerializedPayload_t* payload) override {
    const auto* s = static_cast<OpaqueSample*>(data);
    if (s->size() < 4) return false;
    if (payload->max_size < s->size()) return false;  // the pool sized it from getSerializedSizeProvider
    memcpy(payload->data, s->data(), s->size());
    payload->length = static_cast<uint32_t>(s->size());
    payload->encapsulation = s->data()[1] == 0x00 ? CDR_BE : CDR_LE;
    return true;
  }
  bool deserialize(SerializedPayload_t* payload, void* data) override {
    auto* s = static_cast<OpaqueSample*>(data);
    s->ext = nullptr;
    s->bytes.assign(payload->data, payload->data + payload->length);
    return true;
  }
  std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
    return [data]() { return static_cast<uint32_t>(static_cast<OpaqueSample*>(data)->size()); };
  }
  void* createData() override { return new OpaqueSample(); }
  void deleteData(void* data) override { delete static_cast<OpaqueSample*>(data); }
  bool getKey(void*, eprosima::fastrtps::rtps::InstanceHandle_t*, bool) override { return false; }
};

using Guid = std::array<uint8_t, 16>;

Guid guidOf(const eprosima::fastrtps::rtps::GUID_t& g) {
  Guid out;
  memcpy(out.data(), g.guidPrefix.value, 12);
  memcpy(out.data() + 12, g.entityId.value, 4);
  return out;
}

/// Reads one statistics topic of EntityCount samples ({GUID_s guid; uint64 count}, count
/// cumulative per entity) and keeps the latest count per entity.
class EntityCountListener : public fdds::DataReaderListener {
 public:
  explicit EntityCountListener(fdds::TypeSupport type) : type_(std::move(type)) {}
  void on_data_available(fdds::DataReader* reader) override {
    void* data = type_->createData();
    fdds::SampleInfo info;
    while (reader->take_next_sample(data, &info) == ReturnCode_t::RETCODE_OK) {
      if (!info.valid_data) continue;
      SerializedPayload_t payload(type_->getSerializedSizeProvider(data)());
      if (!type_->serialize(data, &payload) || payload.length < 4 + 16 + 8) continue;
      Guid g;
      memcpy(g.data(), payload.data + 4, 16);
      uint64_t count;
      memcpy(&count, payload.data + 4 + 16, 8);
      if (payload.data[1] == 0x00) count = __builtin_bswap64(count);
      std::lock_guard<std::mutex> lock(mutex_);
      uint64_t& c = counts_[g];
      c = std::max(c, count);
    }
    type_->deleteData(data);
  }
  int64_t sum(const std::set<Guid>& entities) const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const auto& kv : counts_)
      if (entities.count(kv.first)) total += static_cast<int64_t>(kv.second);
    return total;
  }

 private:
  fdds::TypeSupport type_;
  mutable std::mutex mutex_;
  std::map<Guid, uint64_t> counts_;
};

struct Counters {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> received{0};
  std::atomic<int64_t> write_failures{0};
  std::mutex mutex;
  int64_t lost = 0, rejected = 0;  // of deleted readers
  bool any_reader = false;
};

class FastPublisher : public Publisher {
 public:
  FastPublisher(fdds::Publisher* publisher, fdds::DataWriter* writer, std::shared_ptr<Counters> counters,
                std::string topic)
      : publisher_(publisher), writer_(writer), counters_(std::move(counters)), topic_(std::move(topic)) {}
  ~FastPublisher() override { publisher_->delete_datawriter(writer_); }

  void publish(const std::vector<uint8_t>& cdr) override {
    OpaqueSample sample;
    sample.ext = cdr.data();
    sample.ext_size = cdr.size();
    if (!writer_->write(&sample)) {
      int64_t n = ++counters_->write_failures;
      if (n <= 5 || (n & (n - 1)) == 0)
        fprintf(stderr, "netloop fastdds: write of %zu bytes on %s failed (%lld failures so far)\n", cdr.size(),
                topic_.c_str(), static_cast<long long>(n));
      return;
    }
    ++counters_->sent;
  }
  size_t matched() const override {
    fdds::PublicationMatchedStatus st;
    if (writer_->get_publication_matched_status(st) != ReturnCode_t::RETCODE_OK) return 0;
    return static_cast<size_t>(st.current_count);
  }

 private:
  fdds::Publisher* publisher_;
  fdds::DataWriter* writer_;
  std::shared_ptr<Counters> counters_;
  std::string topic_;
};

class ReaderListener : public fdds::DataReaderListener {
 public:
  ReaderListener(SampleCallback cb, std::shared_ptr<Counters> counters)
      : callback_(std::move(cb)), counters_(std::move(counters)) {}
  void on_data_available(fdds::DataReader* reader) override {
    fdds::SampleInfo info;
    while (reader->take_next_sample(&sample_, &info) == ReturnCode_t::RETCODE_OK) {
      if (!info.valid_data) continue;
      ++counters_->received;
      try {
        callback_(sample_.bytes.data(), sample_.bytes.size(), wallNs());
      } catch (const std::exception& e) {
        fprintf(stderr, "netloop fastdds: subscription callback threw: %s\n", e.what());
      }
    }
  }

 private:
  SampleCallback callback_;
  std::shared_ptr<Counters> counters_;
  OpaqueSample sample_;  // reused: on_data_available calls of one reader do not overlap
};

class FastSubscription : public Subscription {
 public:
  FastSubscription(fdds::Subscriber* subscriber, fdds::DataReader* reader, std::unique_ptr<ReaderListener> listener,
                   std::shared_ptr<Counters> counters)
      : subscriber_(subscriber), reader_(reader), listener_(std::move(listener)), counters_(std::move(counters)) {}
  ~FastSubscription() override {
    int64_t lost = 0, rejected = 0;
    read(&lost, &rejected);
    {
      std::lock_guard<std::mutex> lock(counters_->mutex);
      counters_->lost += lost;
      counters_->rejected += rejected;
    }
    reader_->set_listener(nullptr);
    subscriber_->delete_datareader(reader_);
  }
  size_t matched() const override {
    fdds::SubscriptionMatchedStatus st;
    if (reader_->get_subscription_matched_status(st) != ReturnCode_t::RETCODE_OK) return 0;
    return static_cast<size_t>(st.current_count);
  }
  void read(int64_t* lost, int64_t* rejected) const {
    fdds::SampleLostStatus l;
    if (reader_->get_sample_lost_status(l) == ReturnCode_t::RETCODE_OK) *lost += l.total_count;
    fdds::SampleRejectedStatus r;
    if (reader_->get_sample_rejected_status(r) == ReturnCode_t::RETCODE_OK) *rejected += r.total_count;
  }

 private:
  fdds::Subscriber* subscriber_;
  fdds::DataReader* reader_;
  std::unique_ptr<ReaderListener> listener_;
  std::shared_ptr<Counters> counters_;
};

std::mutex& factoryMutex() {
  static std::mutex m;
  return m;
}

void loadProfiles(const std::string& file) {
  static std::set<std::string> loaded;
  if (file.empty() || loaded.count(file)) return;
  FILE* f = fopen(file.c_str(), "r");
  if (!f) throw std::runtime_error("fastdds: cannot read the XML profiles file " + file);
  fclose(f);
  if (fdds::DomainParticipantFactory::get_instance()->load_XML_profiles_file(file) != ReturnCode_t::RETCODE_OK)
    throw std::runtime_error("fastdds: the XML profiles file " + file + " does not load (see Fast DDS's log above)");
  loaded.insert(file);
}

void applyQos(const Qos& q, fdds::ReliabilityQosPolicy* rel, fdds::DurabilityQosPolicy* dur,
              fdds::HistoryQosPolicy* hist) {
  if (q.depth < 1) throw std::invalid_argument("QoS depth " + std::to_string(q.depth) + " must be at least 1");
  rel->kind = q.reliability == Reliability::Reliable ? fdds::RELIABLE_RELIABILITY_QOS : fdds::BEST_EFFORT_RELIABILITY_QOS;
  dur->kind = q.durability == Durability::TransientLocal ? fdds::TRANSIENT_LOCAL_DURABILITY_QOS
                                                         : fdds::VOLATILE_DURABILITY_QOS;
  hist->kind = fdds::KEEP_LAST_HISTORY_QOS;
  hist->depth = q.depth;
}

class FastParticipant : public Participant {
 public:
  explicit FastParticipant(const ParticipantConfig& config) {
    counters_ = std::make_shared<Counters>();
    auto* factory = fdds::DomainParticipantFactory::get_instance();
    std::lock_guard<std::mutex> lock(factoryMutex());
    // Fast DDS 2.9 takes the default participant QoS from the XML profiles only when it loads its
    // own default file (load_profiles) or when told to reset it: load ours in between.
    factory->load_profiles();
    loadProfiles(config.config_file);
    if (!config.config_file.empty()) factory->set_default_participant_qos(fdds::PARTICIPANT_QOS_DEFAULT);
    fdds::DomainParticipantQos pqos = factory->get_default_participant_qos();
    if (!config.node_name.empty()) pqos.name(config.node_name);
    participant_ = factory->create_participant(static_cast<fdds::DomainId_t>(config.domain_id), pqos);
    if (!participant_)
      throw std::runtime_error("fastdds: cannot create a participant on domain " + std::to_string(config.domain_id) +
                               (config.config_file.empty() ? std::string() : " (profiles " + config.config_file + ")"));
    publisher_ = participant_->create_publisher(participant_->get_default_publisher_qos());
    subscriber_ = participant_->create_subscriber(participant_->get_default_subscriber_qos());
    if (!publisher_ || !subscriber_) {
      participant_->delete_contained_entities();
      factory->delete_participant(participant_);
      throw std::runtime_error("fastdds: cannot create a publisher/subscriber");
    }
    const char* want = getenv("NETLOOP_FASTDDS_STATISTICS");
    if (want && std::string(want) == "1") enableStatistics();
  }

  ~FastParticipant() override {
    participant_->delete_contained_entities();
    fdds::DomainParticipantFactory::get_instance()->delete_participant(participant_);
  }

  std::unique_ptr<Publisher> createPublisher(const std::string& ros_topic, const std::string& ros_type,
                                             const Qos& qos) override {
    const std::string topic_name = ddsTopicName(ros_topic);
    fdds::Topic* topic = topic_for(topic_name, ros_type);
    fdds::DataWriterQos wqos = publisher_->get_default_datawriter_qos();
    applyQos(qos, &wqos.reliability(), &wqos.durability(), &wqos.history());
    wqos.publish_mode().kind = eprosima::fastdds::dds::SYNCHRONOUS_PUBLISH_MODE;
    wqos.endpoint().history_memory_policy = eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    wqos.data_sharing().off();
    fdds::DataWriter* writer = publisher_->create_datawriter(topic, wqos);
    if (!writer) throw std::runtime_error("fastdds: cannot create a writer on " + topic_name);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      writer_guids_.insert(guidOf(writer->guid()));
    }
    return std::make_unique<FastPublisher>(publisher_, writer, counters_, topic_name);
  }

  std::unique_ptr<Subscription> createSubscription(const std::string& ros_topic, const std::string& ros_type,
                                                   const Qos& qos, SampleCallback callback) override {
    const std::string topic_name = ddsTopicName(ros_topic);
    fdds::Topic* topic = topic_for(topic_name, ros_type);
    fdds::DataReaderQos rqos = subscriber_->get_default_datareader_qos();
    applyQos(qos, &rqos.reliability(), &rqos.durability(), &rqos.history());
    rqos.endpoint().history_memory_policy = eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    rqos.data_sharing().off();
    auto listener = std::make_unique<ReaderListener>(std::move(callback), counters_);
    fdds::DataReader* reader = subscriber_->create_datareader(topic, rqos, listener.get());
    if (!reader) throw std::runtime_error("fastdds: cannot create a reader on " + topic_name);
    {
      std::lock_guard<std::mutex> lock(counters_->mutex);
      counters_->any_reader = true;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reader_guids_.insert(guidOf(reader->guid()));
    }
    return std::make_unique<TrackedSubscription<FastSubscription>>(
        std::make_unique<FastSubscription>(subscriber_, reader, std::move(listener), counters_), &subscriptions_);
  }

  WireStats stats() const override {
    WireStats w;
    w.samples_sent = counters_->sent;
    w.samples_received = counters_->received;
    int64_t lost = 0, rejected = 0;
    bool any_reader;
    {
      std::lock_guard<std::mutex> lock(counters_->mutex);
      lost = counters_->lost;
      rejected = counters_->rejected;
      any_reader = counters_->any_reader;
    }
    subscriptions_.forEach([&](const FastSubscription& s) { s.read(&lost, &rejected); });
    if (any_reader) {
      w.samples_lost = lost;
      w.samples_rejected = rejected;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (resent_) w.retransmits = resent_->sum(writer_guids_);
    if (heartbeats_) w.heartbeats = heartbeats_->sum(writer_guids_);
    if (acknacks_) w.acknacks = acknacks_->sum(reader_guids_);
    return w;
  }

  std::string middleware() const override { return "fastdds"; }

 private:
  void enableStatistics() {
#ifdef FASTDDS_STATISTICS
    namespace st = eprosima::fastdds::statistics;
    auto* sp = st::dds::DomainParticipant::narrow(participant_);
    if (!sp) return;
    auto enable = [&](const char* topic_name) -> std::unique_ptr<EntityCountListener> {
      if (sp->enable_statistics_datawriter(topic_name, st::dds::STATISTICS_DATAWRITER_QOS) != ReturnCode_t::RETCODE_OK)
        return nullptr;
      auto* td = participant_->lookup_topicdescription(topic_name);
      if (!td) return nullptr;
      fdds::TypeSupport type = participant_->find_type(td->get_type_name());
      if (type.empty()) return nullptr;
      auto listener = std::make_unique<EntityCountListener>(type);
      fdds::DataReaderQos q = subscriber_->get_default_datareader_qos();
      q.reliability().kind = fdds::RELIABLE_RELIABILITY_QOS;
      q.durability().kind = fdds::VOLATILE_DURABILITY_QOS;
      q.history().kind = fdds::KEEP_LAST_HISTORY_QOS;
      q.history().depth = 100;
      if (!subscriber_->create_datareader(td, q, listener.get())) return nullptr;
      return listener;
    };
    resent_ = enable(st::RESENT_DATAS_TOPIC);
    heartbeats_ = enable(st::HEARTBEAT_COUNT_TOPIC);
    acknacks_ = enable(st::ACKNACK_COUNT_TOPIC);
#endif
  }

  fdds::Topic* topic_for(const std::string& topic_name, const std::string& ros_type) {
    const std::string type_name = ddsTypeName(ros_type);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = topics_.find(topic_name);
    if (it != topics_.end()) {
      if (it->second->get_type_name() != type_name)
        throw std::invalid_argument("fastdds: topic " + topic_name + " has type " + it->second->get_type_name() +
                                    " in this participant, not " + type_name);
      return it->second;
    }
    if (!types_.count(type_name)) {
      fdds::TypeSupport ts(new OpaqueType(type_name));
      if (ts.register_type(participant_) != ReturnCode_t::RETCODE_OK)
        throw std::runtime_error("fastdds: cannot register type " + type_name);
      types_.insert(type_name);
    }
    fdds::Topic* topic = participant_->create_topic(topic_name, type_name, participant_->get_default_topic_qos());
    if (!topic) throw std::runtime_error("fastdds: cannot create topic " + topic_name + " of type " + type_name);
    topics_[topic_name] = topic;
    return topic;
  }

  fdds::DomainParticipant* participant_ = nullptr;
  fdds::Publisher* publisher_ = nullptr;
  fdds::Subscriber* subscriber_ = nullptr;
  std::shared_ptr<Counters> counters_;
  mutable std::mutex mutex_;
  std::map<std::string, fdds::Topic*> topics_;
  std::set<std::string> types_;
  LiveSet<FastSubscription> subscriptions_;
  std::set<Guid> writer_guids_, reader_guids_;
  // Declared last: destroyed after the destructor has deleted the readers they listen to.
  std::unique_ptr<EntityCountListener> resent_, heartbeats_, acknacks_;
};

[[maybe_unused]] const bool kRegistered =
    registerMiddleware("fastdds", [](const ParticipantConfig& c) -> std::unique_ptr<Participant> {
      return std::make_unique<FastParticipant>(c);
    });

}  // namespace

}  // namespace ros2
}  // namespace netloop
