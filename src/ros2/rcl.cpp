// Real ROS 2 as a netloop middleware, `rmw_fastrtps_cpp`: each participant is an rcl node of the
// ROS 2 environment make build installs (.venv-ros2-jazzy: rcl 9.2, rmw_fastrtps_cpp 8.4, Fast
// DDS 2.14), so a node using it is a ROS 2 node: it is in the ROS graph (ros_discovery_info),
// its topics carry the type's RIHS01 hash, and the rmw's defaults apply untouched.
//
// Built as the plug-in libnetloop_ros2_mw_rmw_fastrtps_cpp.so (cmake/ros2_rmw.cmake), loaded only
// when asked for: its Fast DDS 2.14 and the fastdds backend's Fast DDS 2.9 share C++ symbols.
//
// Samples: the CDR bytes the nodes produce (encapsulation header included) are exactly what
// rcl_publish_serialized_message takes and rcl_take_serialized_message gives, so nothing is
// converted twice. The type support is found by the type's name, as rclcpp's generic publisher
// does: lib<pkg>__rosidl_typesupport_c.so of the ROS 2 environment, symbol
// rosidl_typesupport_c__get_message_type_support_handle__<pkg>__msg__<Type>.
//
// Reception: one thread per participant waits on an rcl wait set of its subscriptions (what an
// rclcpp executor does) and takes every sample; its time is the wall clock when it was taken.
//
// The ROS 2 environment (prefix compiled in, NETLOOP_ROS2_PREFIX overrides) is put on
// LD_LIBRARY_PATH before rcl starts (rmw_implementation and rosidl_typesupport_c look for
// libraries there by name), and the rmw library is loaded by its full path first. The
// experiment's Fast DDS XML profiles file, if any (ParticipantConfig::config_file), is handed to
// Fast DDS as a ROS 2 user does: FASTRTPS_DEFAULT_PROFILES_FILE.
#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/guard_condition.h>
#include <rcl/init.h>
#include <rcl/node.h>
#include <rcl/publisher.h>
#include <rcl/rcl.h>
#include <rcl/subscription.h>
#include <rcl/wait.h>
#include <rmw/serialized_message.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "netloop/ros2/middleware.h"
#include "live_endpoints.h"
#include "registry.h"

#ifndef NETLOOP_ROS2_PREFIX
#error "NETLOOP_ROS2_PREFIX (the ROS 2 environment) must be defined by cmake/ros2_rmw.cmake"
#endif

namespace netloop {
namespace ros2 {
namespace {

const char kMiddleware[] = "rmw_fastrtps_cpp";

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// rcl's last error as text (and reset), after `what`.
std::runtime_error rclError(const std::string& what) {
  std::string msg = what + ": " + rcl_get_error_string().str;
  rcl_reset_error();
  return std::runtime_error(msg);
}

/// A teardown call whose failure changes nothing.
void ignore(rcl_ret_t) {}

void check(rcl_ret_t ret, const std::string& what) {
  if (ret != RCL_RET_OK) throw rclError(what);
}

std::string prefix() {
  const char* env = std::getenv("NETLOOP_ROS2_PREFIX");
  return env && *env ? env : NETLOOP_ROS2_PREFIX;
}

/// The NEEDED entries of a 64-bit ELF shared library (empty when it cannot be read).
std::vector<std::string> neededLibraries(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  if (data.size() < sizeof(Elf64_Ehdr) || data[EI_CLASS] != ELFCLASS64) return out;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(data.data());
  if (eh->e_shoff + uint64_t(eh->e_shnum) * sizeof(Elf64_Shdr) > data.size()) return out;
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(data.data() + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strtab = sh[sh[i].sh_link];
    if (sh[i].sh_offset + sh[i].sh_size > data.size() || strtab.sh_offset + strtab.sh_size > data.size()) break;
    const auto* dyn = reinterpret_cast<const Elf64_Dyn*>(data.data() + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Dyn) && dyn[k].d_tag != DT_NULL; ++k)
      if (dyn[k].d_tag == DT_NEEDED && dyn[k].d_un.d_val < strtab.sh_size)
        out.emplace_back(data.data() + strtab.sh_offset + dyn[k].d_un.d_val);
  }
  return out;
}

/// dlopen of a library of the ROS 2 environment by its full path, its dependencies from the
/// environment first, deepest first: those find each other by bare name (their RPATHs name only
/// the wheels' bundled folders; a ROS 2 shell has them on LD_LIBRARY_PATH, which glibc reads only
/// when a process starts), and an object already loaded satisfies a later search by that name.
void* loadFromEnvironment(const std::string& path, std::set<std::string>& seen) {
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  for (const auto& dep : neededLibraries(path)) {
    const std::string full = dir + dep;
    if (seen.insert(full).second && access(full.c_str(), R_OK) == 0) loadFromEnvironment(full, seen);
  }
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

void* loadFromEnvironment(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  seen.insert(path);
  return loadFromEnvironment(path, seen);
}

/// Makes the ROS 2 environment's libraries findable by name, once per process, before rcl starts.
void prepareProcess(const std::string& profiles_file) {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string lib = prefix() + "/lib";
    const char* old = std::getenv("LD_LIBRARY_PATH");
    setenv("LD_LIBRARY_PATH", (lib + (old && *old ? ":" + std::string(old) : "")).c_str(), 1);
    setenv("RMW_IMPLEMENTATION", kMiddleware, 1);
    // rmw_implementation opens the rmw by its bare name; dlopen finds it already loaded.
    const std::string rmw = lib + "/librmw_fastrtps_cpp.so";
    if (!loadFromEnvironment(rmw))
      throw std::runtime_error("cannot load " + rmw + ": " + dlerror() + " (run 'make build')");
  });
  if (!profiles_file.empty()) setenv("FASTRTPS_DEFAULT_PROFILES_FILE", profiles_file.c_str(), 1);
}

/// The C type support of ROS 2 type "<pkg>/msg/<Type>" for ROS 1 name "<pkg>/<Type>".
const rosidl_message_type_support_t* typeSupport(const std::string& ros_type) {
  static std::mutex mutex;
  static std::map<std::string, const rosidl_message_type_support_t*> found;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(ros_type);
  if (it != found.end()) return it->second;
  size_t slash = ros_type.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == ros_type.size())
    throw std::invalid_argument("not a ROS message type '<package>/<Type>': '" + ros_type + "'");
  const std::string pkg = ros_type.substr(0, slash), name = ros_type.substr(slash + 1);
  const std::string lib = prefix() + "/lib/lib" + pkg + "__rosidl_typesupport_c.so";
  // The type supports rosidl_typesupport_c dispatches to, loaded first (kept open: rcl keeps the pointer).
  for (const char* impl : {"rosidl_typesupport_fastrtps_c", "rosidl_typesupport_introspection_c"})
    loadFromEnvironment(prefix() + "/lib/lib" + pkg + "__" + impl + ".so");
  void* handle = loadFromEnvironment(lib);
  if (!handle)
    throw std::invalid_argument("ROS 2 has no type support for " + pkg + "/msg/" + name + " in " + prefix() +
                                " (" + dlerror() + "): the ROS 2 environment has builtin_interfaces, std_msgs, "
                                "sensor_msgs, geometry_msgs and netloop's netloop/msg/LoopSample");
  const std::string symbol = "rosidl_typesupport_c__get_message_type_support_handle__" + pkg + "__msg__" + name;
  using Getter = const rosidl_message_type_support_t* (*)();
  auto get = reinterpret_cast<Getter>(dlsym(handle, symbol.c_str()));
  if (!get) throw std::invalid_argument("ROS 2 package " + pkg + " has no message " + name + " (" + lib + ")");
  return found[ros_type] = get();
}

rmw_qos_profile_t rmwQos(const Qos& q) {
  rmw_qos_profile_t p = rmw_qos_profile_default;
  p.history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
  p.depth = static_cast<size_t>(q.depth);
  p.reliability = q.reliability == Reliability::Reliable ? RMW_QOS_POLICY_RELIABILITY_RELIABLE
                                                         : RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  p.durability = q.durability == Durability::TransientLocal ? RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL
                                                            : RMW_QOS_POLICY_DURABILITY_VOLATILE;
  return p;
}

/// A ROS 2 node name from netloop's ("plant", "flow_sink_cam"): [A-Za-z0-9_], not starting with a digit.
std::string nodeName(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "netloop_" + out;
  return out;
}

class RclParticipant;

class RclPublisher {
 public:
  RclPublisher(rcl_node_t* node, const std::string& topic, const std::string& type, const Qos& qos) : node_(node) {
    rcl_publisher_options_t opts = rcl_publisher_get_default_options();
    opts.qos = rmwQos(qos);
    check(rcl_publisher_init(&pub_, node_, typeSupport(type), topic.c_str(), &opts),
          "rcl_publisher_init(" + topic + ")");
  }
  ~RclPublisher() { ignore(rcl_publisher_fini(&pub_, node_)); }
  void publish(const std::vector<uint8_t>& cdr) {
    rmw_serialized_message_t msg = rmw_get_zero_initialized_serialized_message();
    msg.buffer = const_cast<uint8_t*>(cdr.data());
    msg.buffer_length = msg.buffer_capacity = cdr.size();
    msg.allocator = rcutils_get_default_allocator();
    check(rcl_publish_serialized_message(&pub_, &msg, nullptr), "rcl_publish_serialized_message");
    sent++;
  }
  size_t matched() const {
    size_t n = 0;
    return rcl_publisher_get_subscription_count(&pub_, &n) == RCL_RET_OK ? n : 0;
  }
  std::atomic<int64_t> sent{0};

 private:
  rcl_node_t* node_;
  rcl_publisher_t pub_ = rcl_get_zero_initialized_publisher();
};

class RclSubscription {
 public:
  RclSubscription(rcl_node_t* node, const std::string& topic, const std::string& type, const Qos& qos,
                  SampleCallback cb)
      : node_(node), callback_(std::move(cb)) {
    rcl_subscription_options_t opts = rcl_subscription_get_default_options();
    opts.qos = rmwQos(qos);
    check(rcl_subscription_init(&sub_, node_, typeSupport(type), topic.c_str(), &opts),
          "rcl_subscription_init(" + topic + ")");
    rcutils_allocator_t alloc = rcutils_get_default_allocator();
    if (rmw_serialized_message_init(&buffer_, 0, &alloc) != RMW_RET_OK) throw std::bad_alloc();
  }
  ~RclSubscription() {
    ignore(rcl_subscription_fini(&sub_, node_));
    ignore(rcutils_uint8_array_fini(&buffer_));
  }
  size_t matched() const {
    size_t n = 0;
    return rcl_subscription_get_publisher_count(&sub_, &n) == RCL_RET_OK ? n : 0;
  }
  rcl_subscription_t* handle() { return &sub_; }
  /// Takes every sample waiting (called on the participant's wait thread).
  void takeAll() {
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    while (rcl_take_serialized_message(&sub_, &buffer_, &info, nullptr) == RCL_RET_OK) {
      received++;
      callback_(buffer_.buffer, buffer_.buffer_length, wallNs());
    }
    rcl_reset_error();   // RCL_RET_SUBSCRIPTION_TAKE_FAILED: nothing more
  }
  std::atomic<int64_t> received{0};

 private:
  rcl_node_t* node_;
  SampleCallback callback_;
  rcl_subscription_t sub_ = rcl_get_zero_initialized_subscription();
  rmw_serialized_message_t buffer_ = rmw_get_zero_initialized_serialized_message();
};

class RclParticipant : public Participant {
 public:
  explicit RclParticipant(const ParticipantConfig& config) {
    prepareProcess(config.config_file);
    rcl_allocator_t alloc = rcl_get_default_allocator();
    rcl_init_options_t init_opts = rcl_get_zero_initialized_init_options();
    check(rcl_init_options_init(&init_opts, alloc), "rcl_init_options_init");
    rcl_init_options_get_rmw_init_options(&init_opts)->domain_id = static_cast<size_t>(config.domain_id);
    rcl_ret_t ret = rcl_init(0, nullptr, &init_opts, &context_);
    ignore(rcl_init_options_fini(&init_opts));
    check(ret, "rcl_init");
    rcl_node_options_t node_opts = rcl_node_get_default_options();
    const std::string name = nodeName(config.node_name.empty() ? "netloop" : config.node_name);
    check(rcl_node_init(&node_, name.c_str(), "/", &context_, &node_opts), "rcl_node_init(" + name + ")");
    check(rcl_guard_condition_init(&wake_, &context_, rcl_guard_condition_get_default_options()),
          "rcl_guard_condition_init");
    waiter_ = std::thread([this] { waitLoop(); });
  }

  ~RclParticipant() override {
    stop_ = true;
    ignore(rcl_trigger_guard_condition(&wake_));
    if (waiter_.joinable()) waiter_.join();
    ignore(rcl_guard_condition_fini(&wake_));
    ignore(rcl_node_fini(&node_));
    ignore(rcl_shutdown(&context_));
    ignore(rcl_context_fini(&context_));
  }

  std::unique_ptr<Publisher> createPublisher(const std::string& topic, const std::string& type,
                                             const Qos& qos) override {
    return std::make_unique<TrackedPublisher<RclPublisher>>(std::make_unique<RclPublisher>(&node_, topic, type, qos),
                                                            &publishers_);
  }

  std::unique_ptr<Subscription> createSubscription(const std::string& topic, const std::string& type, const Qos& qos,
                                                   SampleCallback callback) override {
    auto sub = std::make_unique<RclSubscription>(&node_, topic, type, qos, std::move(callback));
    auto handle = std::make_unique<Handle>(std::move(sub), this);
    return handle;
  }

  WireStats stats() const override {
    WireStats w;
    publishers_.forEach([&](const RclPublisher& p) { w.samples_sent += p.sent; });
    std::lock_guard<std::mutex> lock(list_);
    w.samples_received = received_by_gone_;
    for (auto* s : subs_) w.samples_received += s->received;
    return w;
  }
  std::string middleware() const override { return kMiddleware; }

 private:
  /// The Subscription handed out: off the wait set (between two waits) before it is destroyed.
  class Handle : public Subscription {
   public:
    Handle(std::unique_ptr<RclSubscription> s, RclParticipant* p) : s_(std::move(s)), p_(p) { p_->attach(s_.get()); }
    ~Handle() override { p_->detach(s_.get()); }
    size_t matched() const override { return s_->matched(); }

   private:
    std::unique_ptr<RclSubscription> s_;
    RclParticipant* p_;
  };

  /// Runs `change` on the subscription list between two waits (the wait thread lets it in).
  template <class F>
  void betweenWaits(F change) {
    pending_++;
    ignore(rcl_trigger_guard_condition(&wake_));
    {
      std::lock_guard<std::mutex> cycle(cycle_);
      std::lock_guard<std::mutex> lock(list_);
      change();
    }
    pending_--;
  }
  void attach(RclSubscription* s) {
    betweenWaits([&] { subs_.push_back(s); });
  }
  void detach(RclSubscription* s) {
    betweenWaits([&] {
      subs_.erase(std::remove(subs_.begin(), subs_.end(), s), subs_.end());
      received_by_gone_ += s->received;
    });
  }

  /// The executor: waits on every subscription and the wake-up guard, takes what came.
  void waitLoop() {
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    if (rcl_wait_set_init(&ws, 0, 1, 0, 0, 0, 0, &context_, rcl_get_default_allocator()) != RCL_RET_OK) {
      std::fprintf(stderr, "rmw_fastrtps_cpp: rcl_wait_set_init: %s\n", rcl_get_error_string().str);
      return;
    }
    while (!stop_) {
      while (pending_ && !stop_) std::this_thread::yield();
      std::lock_guard<std::mutex> cycle(cycle_);
      std::vector<RclSubscription*> subs;
      {
        std::lock_guard<std::mutex> lock(list_);
        subs = subs_;
      }
      if (rcl_wait_set_resize(&ws, subs.size(), 1, 0, 0, 0, 0) != RCL_RET_OK) break;
      ignore(rcl_wait_set_clear(&ws));
      for (auto* s : subs) ignore(rcl_wait_set_add_subscription(&ws, s->handle(), nullptr));
      ignore(rcl_wait_set_add_guard_condition(&ws, &wake_, nullptr));
      rcl_ret_t ret = rcl_wait(&ws, RCL_MS_TO_NS(200));
      if (ret == RCL_RET_TIMEOUT) continue;
      if (ret != RCL_RET_OK) {
        rcl_reset_error();
        continue;
      }
      for (size_t i = 0; i < subs.size(); ++i)
        if (ws.subscriptions[i]) subs[i]->takeAll();
    }
    ignore(rcl_wait_set_fini(&ws));
  }

  rcl_context_t context_ = rcl_get_zero_initialized_context();
  rcl_node_t node_ = rcl_get_zero_initialized_node();
  rcl_guard_condition_t wake_ = rcl_get_zero_initialized_guard_condition();
  LiveSet<RclPublisher> publishers_;
  mutable std::mutex list_;   // subs_, received_by_gone_
  std::mutex cycle_;          // held by the wait thread for one wait and its takes
  std::vector<RclSubscription*> subs_;
  int64_t received_by_gone_ = 0;
  std::atomic<int> pending_{0};   // list changes waiting for the wait thread to let them in
  std::atomic<bool> stop_{false};
  std::thread waiter_;
};

[[maybe_unused]] const bool kRegistered =
    registerMiddleware(kMiddleware, [](const ParticipantConfig& c) -> std::unique_ptr<Participant> {
      return std::make_unique<RclParticipant>(c);
    });

}  // namespace
}  // namespace ros2
}  // namespace netloop
