// The nodes of netloop_wifi_link and where they stand: the tapped stations (--taps), the access
// point in --mode ap, their MACs (ad-hoc, or stations of SSID "netloop"), their positions
// (--layout line or star, --distance), and the TapBridges that join them to the Linux taps.
#pragma once

#include "wifi_options.h"

#include "ns3/net-device-container.h"
#include "ns3/node-container.h"
#include "ns3/wifi-helper.h"
#include "ns3/wifi-mac-helper.h"
#include "ns3/yans-wifi-helper.h"

namespace netloop::wifi
{

/// The network: its nodes and devices, and the helpers that made them (more stations on the
/// same channel, e.g. background traffic, are installed with them).
struct WifiNetwork
{
    ns3::NodeContainer stations;    // the tapped nodes, in --taps order
    ns3::NodeContainer accessPoint; // --mode ap: the access point (no tap); else empty
    ns3::NetDeviceContainer tapped; // the stations' devices
    ns3::NetDeviceContainer all;    // tapped, then the access point's
    ns3::WifiHelper wifi;
    ns3::YansWifiPhyHelper phy;
    ns3::WifiMacHelper mac; // after BuildNetwork: the ad-hoc MAC (ap mode: the access point's)
};

/// Creates the stations (and the access point) with `net.wifi` and `net.phy`, configured
/// (wifi_channel.h), and places them. --qos: every MAC with QosSupported (EDCA); 802.11n's
/// always are (ns-3's WifiMacHelper forces it for HT), so there --qos only adds the
/// classification (qos_classifier.h).
void BuildNetwork(const WifiOptions& o, WifiNetwork& net);

/// A TapBridge from each station to its tap, in ConfigureLocal mode: the tap takes the
/// device's MAC (UseLocal would change the device's MAC, which ns-3 3.37's
/// FrameExchangeManager does not follow: no 802.11 ACKs).
void InstallTapBridges(const WifiOptions& o, WifiNetwork& net);

/// Whether every station of an infrastructure network is associated (true in ad-hoc mode).
bool StationsAssociated(const ns3::NetDeviceContainer& tapped);

} // namespace netloop::wifi
