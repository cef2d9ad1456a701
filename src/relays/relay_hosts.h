// The priority relay's hosts (~hosts): every relay of a run, by index, with its address.
#pragma once

#include <netinet/in.h>
#include <ros/ros.h>

#include <string>
#include <vector>

namespace netloop {
namespace relay {

struct Host {
  std::string name, address;
  int port = 0;
  sockaddr_in sa{};
};

/// Reads ~hosts (a list of at least two {name, address, port}) and checks that `self` is one
/// of its indices; ends the node with a configuration error otherwise.
std::vector<Host> readHosts(const ros::NodeHandle& pnh, int self);

/// Whether `from` is a host of `hosts` other than `self` (address and port).
bool isPeerOf(const std::vector<Host>& hosts, int self, const sockaddr_in& from);

}  // namespace relay
}  // namespace netloop
