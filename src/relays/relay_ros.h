// What the relay nodes share on the ROS side: topic configuration from parameters, UDP
// sockets, republishing any type (ShapeShifter). Statistics: relay_stats.h; the UDP receive
// loop: udp_receive_loop.h.
#pragma once

#include <netinet/in.h>
#include <ros/ros.h>
#include <topic_tools/shape_shifter.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "wire/format.h"
#include "wire/type_info.h"

namespace netloop {
namespace relay {

/// Monotonic clock [ns] (timeouts, pacing).
int64_t monoNs();
/// Wall clock [ns since the epoch] (records).
int64_t wallNs();
/// CPU time of this process [s] (user + system).
double cpuSeconds();

/// One topic of a relay's `topics` parameter (a list of structs). Keys, all optional but
/// `name`: rate [Hz, 0 = no limit], compress (bool), type/md5/definition (the message type,
/// so the receiving side can advertise before the first message), priority (int),
/// source/dest (host indices), protocol ("udp" | "tcp").
struct TopicConfig {
  std::string name;
  TypeInfo type;  // type.topic == name; datatype empty when unknown
  double rate = 0.0;
  bool compress = false;
  int priority = 0;
  int source = -1, dest = -1;
  std::string protocol = "udp";
  uint32_t id = 0;
};

/// Reads ~<param> (list of structs); ends the node with a configuration error when malformed.
std::vector<TopicConfig> readTopics(const ros::NodeHandle& pnh, const std::string& param);

/// IPv4 address + port; false for a malformed address.
bool makeAddress(const std::string& ip, int port, sockaddr_in& out);
std::string addressString(const sockaddr_in& a);

/// A UDP socket bound to an address (non-blocking receive with a timeout).
class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;
  /// Binds to ip:port (port 0 = any); throws std::runtime_error on failure.
  void bind(const std::string& ip, int port, int rcvbuf = 4 << 20);
  /// false on error (errno kept).
  bool sendTo(const sockaddr_in& to, const uint8_t* data, size_t len);
  /// Bytes received (0..), or -1 on timeout/error. `from` is the sender.
  ssize_t recvFrom(uint8_t* buf, size_t cap, sockaddr_in& from, int timeout_ms);
  int port() const;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

/// The serialized bytes of a message received as ShapeShifter, and its type.
std::vector<uint8_t> serialize(const topic_tools::ShapeShifter& msg);
TypeInfo typeOf(const topic_tools::ShapeShifter& msg, const std::string& topic);

/// Republishes serialized messages of any type on one topic. Advertises as soon as the
/// type is known (from the configuration: at start, so subscribers connect before the
/// first message; else from the sender's type announcement). Thread-safe.
class Outlet {
 public:
  Outlet(ros::NodeHandle nh, std::string topic, int queue = 100) : nh_(nh), topic_(std::move(topic)), queue_(queue) {}
  /// Advertises with `t` if not advertised yet; returns false if `t` disagrees with the
  /// type already advertised (the message type changed: refused, counted by the caller).
  bool setType(const TypeInfo& t);
  bool advertised() const;
  /// Publishes one serialized message; false if the type is unknown yet.
  bool publish(const uint8_t* data, size_t len);

  enum class Delivery { Published, BadPayload, Untyped };
  /// Publishes a received payload: inflated first when `flags` has kFlagCompressed (to
  /// `orig_len` bytes, at most `max_bytes`). BadPayload: it does not inflate; Untyped: the
  /// type is not known yet.
  Delivery publishPayload(const std::vector<uint8_t>& data, uint8_t flags, size_t orig_len, size_t max_bytes);
  const std::string& topic() const { return topic_; }

 private:
  mutable std::mutex mu_;
  ros::NodeHandle nh_;
  std::string topic_;
  int queue_;
  TypeInfo type_;
  ros::Publisher pub_;
};

/// Allowed peer addresses ("ip" or "ip:port" strings, parameter list); empty = any.
class PeerFilter {
 public:
  void add(const std::string& spec);  // throws std::invalid_argument
  bool allowed(const sockaddr_in& from) const;
  bool empty() const { return ips_.empty(); }

 private:
  std::vector<std::pair<uint32_t, int>> ips_;  // (addr in network order, port or -1)
};

/// Reads a list-of-strings parameter (absent = empty).
std::vector<std::string> readStringList(const ros::NodeHandle& pnh, const std::string& param);

}  // namespace relay
}  // namespace netloop
