// The priority relay's hosts (~hosts).
#include "relay_hosts.h"

#include "netloop/loop_node.h"
#include "relay_ros.h"

namespace netloop {
namespace relay {

std::vector<Host> readHosts(const ros::NodeHandle& pnh, int self) {
  XmlRpc::XmlRpcValue v;
  if (!pnh.getParam("hosts", v) || v.getType() != XmlRpc::XmlRpcValue::TypeArray || v.size() < 2)
    exitWithConfigError("parameter ~hosts: a list of at least two {name, address, port}");
  std::vector<Host> hosts;
  for (int i = 0; i < v.size(); ++i) {
    auto& e = v[i];
    if (e.getType() != XmlRpc::XmlRpcValue::TypeStruct || !e.hasMember("address") || !e.hasMember("port") ||
        e["address"].getType() != XmlRpc::XmlRpcValue::TypeString ||
        e["port"].getType() != XmlRpc::XmlRpcValue::TypeInt)
      exitWithConfigError("~hosts[" + std::to_string(i) + "] must be {name, address, port}");
    Host h;
    h.name = e.hasMember("name") ? static_cast<std::string>(e["name"]) : "host" + std::to_string(i);
    h.address = static_cast<std::string>(e["address"]);
    h.port = static_cast<int>(e["port"]);
    if (!makeAddress(h.address, h.port, h.sa) || h.port <= 0)
      exitWithConfigError("~hosts[" + std::to_string(i) + "]: bad address or port");
    hosts.push_back(h);
  }
  if (hosts.size() > 255) exitWithConfigError("~hosts: at most 255 hosts");
  if (self >= static_cast<int>(hosts.size())) exitWithConfigError("~self is not an index of ~hosts");
  return hosts;
}

bool isPeerOf(const std::vector<Host>& hosts, int self, const sockaddr_in& from) {
  for (size_t i = 0; i < hosts.size(); ++i)
    if (static_cast<int>(i) != self && hosts[i].sa.sin_addr.s_addr == from.sin_addr.s_addr &&
        hosts[i].sa.sin_port == from.sin_port)
      return true;
  return false;
}

}  // namespace relay
}  // namespace netloop
