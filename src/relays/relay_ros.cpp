#include "relay_ros.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "netloop/loop_node.h"
#include "wire/compression.h"
#include "wire/packet.h"

namespace netloop {
namespace relay {

int64_t monoNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

namespace {

std::string str(XmlRpc::XmlRpcValue& v, const char* key, const std::string& fallback, const std::string& where) {
  if (!v.hasMember(key)) return fallback;
  if (v[key].getType() != XmlRpc::XmlRpcValue::TypeString)
    exitWithConfigError(where + "." + key + " must be a string");
  return static_cast<std::string>(v[key]);
}

double num(XmlRpc::XmlRpcValue& v, const char* key, double fallback, const std::string& where) {
  if (!v.hasMember(key)) return fallback;
  auto& x = v[key];
  if (x.getType() == XmlRpc::XmlRpcValue::TypeInt) return static_cast<int>(x);
  if (x.getType() == XmlRpc::XmlRpcValue::TypeDouble) return static_cast<double>(x);
  exitWithConfigError(where + "." + key + " must be a number");
}

bool flag(XmlRpc::XmlRpcValue& v, const char* key, bool fallback, const std::string& where) {
  if (!v.hasMember(key)) return fallback;
  if (v[key].getType() != XmlRpc::XmlRpcValue::TypeBoolean) exitWithConfigError(where + "." + key + " must be a boolean");
  return static_cast<bool>(v[key]);
}

}  // namespace

std::vector<TopicConfig> readTopics(const ros::NodeHandle& pnh, const std::string& param) {
  std::vector<TopicConfig> out;
  XmlRpc::XmlRpcValue list;
  if (!pnh.getParam(param, list)) return out;
  const std::string where = pnh.resolveName(param);
  if (list.getType() != XmlRpc::XmlRpcValue::TypeArray) exitWithConfigError(where + " must be a list of topics");
  for (int i = 0; i < list.size(); ++i) {
    XmlRpc::XmlRpcValue& e = list[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (e.getType() != XmlRpc::XmlRpcValue::TypeStruct) exitWithConfigError(at + " must be a mapping");
    TopicConfig t;
    t.name = str(e, "name", "", at);
    if (t.name.empty() || t.name[0] != '/') exitWithConfigError(at + ".name must be a global topic name");
    t.type.topic = t.name;
    t.type.datatype = str(e, "type", "", at);
    t.type.md5 = str(e, "md5", "", at);
    t.type.definition = str(e, "definition", "", at);
    if (!t.type.datatype.empty() && t.type.md5.empty()) t.type.datatype.clear();  // type alone: learn the rest
    t.rate = num(e, "rate", 0.0, at);
    if (!(t.rate >= 0)) exitWithConfigError(at + ".rate must be >= 0");
    t.compress = flag(e, "compress", false, at);
    t.priority = static_cast<int>(num(e, "priority", 0, at));
    if (t.priority < 0 || t.priority > 255) exitWithConfigError(at + ".priority must be in 0..255");
    t.source = static_cast<int>(num(e, "source", -1, at));
    t.dest = static_cast<int>(num(e, "dest", -1, at));
    t.protocol = str(e, "protocol", "udp", at);
    if (t.protocol != "udp" && t.protocol != "tcp") exitWithConfigError(at + ".protocol must be udp or tcp");
    t.id = topicId(t.name);
    for (const auto& other : out)
      if (other.id == t.id) exitWithConfigError(at + ": topic listed twice (or id collision): " + t.name);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> readStringList(const ros::NodeHandle& pnh, const std::string& param) {
  std::vector<std::string> out;
  XmlRpc::XmlRpcValue list;
  if (!pnh.getParam(param, list)) return out;
  if (list.getType() != XmlRpc::XmlRpcValue::TypeArray)
    exitWithConfigError(pnh.resolveName(param) + " must be a list of strings");
  for (int i = 0; i < list.size(); ++i) {
    if (list[i].getType() != XmlRpc::XmlRpcValue::TypeString)
      exitWithConfigError(pnh.resolveName(param) + " must be a list of strings");
    out.push_back(static_cast<std::string>(list[i]));
  }
  return out;
}

bool makeAddress(const std::string& ip, int port, sockaddr_in& out) {
  std::memset(&out, 0, sizeof out);
  out.sin_family = AF_INET;
  if (port < 0 || port > 65535) return false;
  out.sin_port = htons(static_cast<uint16_t>(port));
  return inet_pton(AF_INET, ip.c_str(), &out.sin_addr) == 1;
}

std::string addressString(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

void UdpSocket::bind(const std::string& ip, int port, int rcvbuf) {
  sockaddr_in a;
  if (!makeAddress(ip.empty() ? "0.0.0.0" : ip, port, a)) throw std::runtime_error("bad address " + ip);
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("bind " + addressString(a) + ": " + std::strerror(errno));
}

bool UdpSocket::sendTo(const sockaddr_in& to, const uint8_t* data, size_t len) {
  for (;;) {
    const ssize_t n = ::sendto(fd_, data, len, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (n >= 0) return static_cast<size_t>(n) == len;
    if (errno != EINTR) return false;
  }
}

ssize_t UdpSocket::recvFrom(uint8_t* buf, size_t cap, sockaddr_in& from, int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r <= 0) return -1;
  socklen_t fl = sizeof from;
  return ::recvfrom(fd_, buf, cap, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fl);
}

int UdpSocket::port() const {
  sockaddr_in a{};
  socklen_t l = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &l);
  return ntohs(a.sin_port);
}

std::vector<uint8_t> serialize(const topic_tools::ShapeShifter& msg) {
  std::vector<uint8_t> buf(msg.size());
  ros::serialization::OStream stream(buf.data(), static_cast<uint32_t>(buf.size()));
  msg.write(stream);
  return buf;
}

TypeInfo typeOf(const topic_tools::ShapeShifter& msg, const std::string& topic) {
  return TypeInfo{topic, msg.getDataType(), msg.getMD5Sum(), msg.getMessageDefinition()};
}

bool Outlet::setType(const TypeInfo& t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!type_.datatype.empty()) return type_.md5 == t.md5 || t.md5 == "*";
  type_ = t;
  topic_tools::ShapeShifter shape;
  shape.morph(t.md5, t.datatype, t.definition, "false");
  pub_ = shape.advertise(nh_, topic_, queue_);
  return true;
}

bool Outlet::advertised() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !type_.datatype.empty();
}

bool Outlet::publish(const uint8_t* data, size_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  if (type_.datatype.empty()) return false;
  topic_tools::ShapeShifter shape;
  shape.morph(type_.md5, type_.datatype, type_.definition, "false");
  ros::serialization::IStream stream(const_cast<uint8_t*>(data), static_cast<uint32_t>(len));
  shape.read(stream);
  pub_.publish(shape);
  return true;
}

Outlet::Delivery Outlet::publishPayload(const std::vector<uint8_t>& data, uint8_t flags, size_t orig_len,
                                        size_t max_bytes) {
  if (!(flags & kFlagCompressed)) return publish(data.data(), data.size()) ? Delivery::Published : Delivery::Untyped;
  std::vector<uint8_t> inflated;
  if (!decompressBytes(data.data(), data.size(), orig_len, max_bytes, inflated)) return Delivery::BadPayload;
  return publish(inflated.data(), inflated.size()) ? Delivery::Published : Delivery::Untyped;
}

void PeerFilter::add(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string ip = spec.substr(0, colon);
  int port = -1;
  if (colon != std::string::npos) port = std::stoi(spec.substr(colon + 1));
  sockaddr_in a;
  if (!makeAddress(ip, port < 0 ? 0 : port, a)) throw std::invalid_argument("bad peer address '" + spec + "'");
  ips_.emplace_back(a.sin_addr.s_addr, port);
}

bool PeerFilter::allowed(const sockaddr_in& from) const {
  if (ips_.empty()) return true;
  for (const auto& [ip, port] : ips_)
    if (ip == from.sin_addr.s_addr && (port < 0 || port == ntohs(from.sin_port))) return true;
  return false;
}

}  // namespace relay
}  // namespace netloop
