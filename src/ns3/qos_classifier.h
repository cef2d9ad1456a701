// 802.11e QoS on the emulated air (--qos): every station's MAC is built with QosSupported
// (wifi_topology.cc), so each has four EDCA queues and channel-access functions, one per access
// category, with the standard's default parameters. This file decides which one a frame from a
// tap goes to, and counts the frames each access category's queue takes.
//
// Frames from a tap carry no ns-3 priority tag, and ns-3's own classifier
// (SelectQueueByDSField) belongs to its IP traffic-control layer, which the tapped nodes do
// not have. ns-3 3.37's WifiNetDevice::Send adds the LLC/SNAP header, fires the MAC's MacTx
// trace (WifiMac::NotifyTx), then hands the packet to WifiMac::Enqueue, whose QoS branch takes
// the TID from a SocketPriorityTag (QosUtilsGetTidForPacket; none: 0, best effort). A MacTx
// sink therefore sees every frame first: it reads the IP header's DS field and adds that tag
// with the user priority Linux's mac80211 would give the frame (user_priority.h). Packet tags
// are metadata: Packet::AddPacketTag is const and leaves the bytes alone. In ap mode the
// access point forwards a station's frame with the TID it arrived with (ApWifiMac), so both
// crossings of the air use the sender's access category.
#pragma once

#include "wifi_stats.h"

#include "ns3/net-device-container.h"
#include <vector>

namespace netloop::wifi
{

/// Tags what each of `tapped` (the stations bridged to taps) sends with its user priority, and
/// counts into counters[i] the frames entering each access-category queue of device i of `all`
/// (the stats line's "ac_enqueued"; devices without QoS are not counted). Call once, after the
/// devices exist; `counters` must not be resized afterwards (the trace callbacks point into it).
void InstallQosClassifier(const ns3::NetDeviceContainer& tapped,
                          const ns3::NetDeviceContainer& all,
                          std::vector<NodeCounters>& counters);

} // namespace netloop::wifi
