// eProsima Fast DDS 2.9 as a netloop middleware.
//
// Samples are opaque CDR: a TopicDataType of our own copies the bytes (encapsulation header
// included) into and out of the SerializedPayload_t, and is registered under ROS 2's type name
// (ddsTypeName) for the topic ddsTopicName(topic), keyless, as rmw_fastrtps_cpp does. QoS comes
// from the XML profiles file's defaults (config_file, loaded before the participant is created)
// with ROS 2's reliability, durability and history depth set on top; the publish mode stays the
// profile's (synchronous unless it says otherwise, as rmw_fastrtps_cpp), which fragments large
// samples in Fast DDS 2.x. History memory is PREALLOCATED_WITH_REALLOC, as rmw_fastrtps_cpp uses
// for unbounded types, so samples of any size fit.
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

/// A sample: its CDR bytes, encapsulation header included.
struct OpaqueSample {
  std::vector<uint8_t> bytes;
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
    const auto& b = static_cast<OpaqueSample*>(data)->bytes;
    if (b.size() < 4) return false;
    if (payload->max_size < b.size()) return false;  // the pool sized it from getSerializedSizeProvider
    memcpy(payload->data, b.data(), b.size());
    payload->length = static_cast<uint32_t>(b.size());
    payload->encapsulation = b[1] == 0x00 ? CDR_BE : CDR_LE;
    return true;
  }
  bool deserialize(SerializedPayload_t* payload, void* data) override {
    auto& b = static_cast<OpaqueSample*>(data)->bytes;
    b.assign(payload->data, payload->data + payload->length);
    return true;
  }
  std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
    return [data]() { return static_cast<uint32_t>(static_cast<OpaqueSample*>(data)->bytes.size()); };
  }
  void* createData() override { return new OpaqueSample(); }
  void deleteData(void* data) override { delete static_cast<OpaqueSample*>(data); }
  bool getKey(void*, eprosima::fastrtps::rtps::InstanceHandle_t*, bool) override { return false; }
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
    sample.bytes = cdr;
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
    wqos.endpoint().history_memory_policy = eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    wqos.data_sharing().off();
    fdds::DataWriter* writer = publisher_->create_datawriter(topic, wqos);
    if (!writer) throw std::runtime_error("fastdds: cannot create a writer on " + topic_name);
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
    auto sub = std::make_unique<FastSubscription>(subscriber_, reader, std::move(listener), counters_);
    std::lock_guard<std::mutex> lock(mutex_);
    subscriptions_.insert(sub.get());
    return std::unique_ptr<Subscription>(new TrackedSub(std::move(sub), this));
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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto* s : subscriptions_) s->read(&lost, &rejected);
    }
    if (any_reader) {
      w.samples_lost = lost;
      w.samples_rejected = rejected;
    }
    return w;
  }

  std::string middleware() const override { return "fastdds"; }

 private:
  struct TrackedSub : Subscription {
    TrackedSub(std::unique_ptr<FastSubscription> s, FastParticipant* owner) : s_(std::move(s)), owner_(owner) {}
    ~TrackedSub() override {
      {
        std::lock_guard<std::mutex> lock(owner_->mutex_);
        owner_->subscriptions_.erase(s_.get());
      }
      s_.reset();
    }
    size_t matched() const override { return s_->matched(); }
    std::unique_ptr<FastSubscription> s_;
    FastParticipant* owner_;
  };

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
  std::set<FastSubscription*> subscriptions_;
};

[[maybe_unused]] const bool kRegistered =
    registerMiddleware("fastdds", [](const ParticipantConfig& c) -> std::unique_ptr<Participant> {
      return std::make_unique<FastParticipant>(c);
    });

}  // namespace

}  // namespace ros2
}  // namespace netloop
