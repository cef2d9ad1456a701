// Eclipse Cyclone DDS 0.10 as a netloop middleware.
//
// Samples are opaque CDR: a sertype/serdata pair of our own carries the bytes as they are (the
// encapsulation header included) so that the topic is registered under ROS 2's type name
// (ddsTypeName) and topic name (ddsTopicName), keyless, exactly as rmw_cyclonedds_cpp registers
// it. Writing is dds_writecdr; reading is a listener (on_data_available) that takes with
// dds_takecdr and hands the bytes to the subscription's callback without deserializing.
//
// Files: cyclonedds_sertype.* (the opaque sertype / serdata), cyclonedds_endpoints.* (QoS,
// writers, readers and their listener), this file (domains, the participant, registration).
#include <dds/dds.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>

#include "netloop/ros2/middleware.h"
#include "netloop/ros2/names.h"
#include "cyclonedds_endpoints.h"
#include "cyclonedds_sertype.h"
#include "live_endpoints.h"
#include "registry.h"

namespace netloop {
namespace ros2 {
namespace cyclone {

namespace {

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

}  // namespace cyclone
}  // namespace ros2
}  // namespace netloop
