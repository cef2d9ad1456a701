#include "wifi_topology.h"

#include "ns3/boolean.h"
#include "ns3/ipv4-address.h"
#include "ns3/mobility-helper.h"
#include "ns3/position-allocator.h"
#include "ns3/ssid.h"
#include "ns3/sta-wifi-mac.h"
#include "ns3/string.h"
#include "ns3/tap-bridge-helper.h"
#include "ns3/wifi-net-device.h"

#include <cmath>

namespace netloop::wifi
{

using namespace ns3;

namespace
{

/// Line: neighbours `distance` apart (ap mode: the stations at 0 and 2 d, the AP at d).
/// Star: the hub (the access point, or the last tap: the operator) at the origin, the other
/// stations evenly on a circle of radius `distance` around it.
Ptr<ListPositionAllocator>
Positions(const WifiOptions& o)
{
    const uint32_t n = o.taps.size();
    const bool infrastructure = o.Infrastructure();
    Ptr<ListPositionAllocator> positions = CreateObject<ListPositionAllocator>();
    if (o.Star())
    {
        const uint32_t around = infrastructure ? n : n - 1;
        for (uint32_t i = 0; i < around; ++i)
        {
            const double a = 2.0 * M_PI * i / around;
            positions->Add(Vector(o.distance * std::cos(a), o.distance * std::sin(a), 0.0));
        }
        positions->Add(Vector(0.0, 0.0, 0.0)); // the operator (ad-hoc) or the access point
    }
    else
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            positions->Add(Vector(i * o.distance * (infrastructure ? 2 : 1), 0.0, 0.0));
        }
        if (infrastructure)
        {
            positions->Add(Vector(o.distance, 0.0, 0.0));
        }
    }
    return positions;
}

} // namespace

void
BuildNetwork(const WifiOptions& o, WifiNetwork& net)
{
    net.stations.Create(o.taps.size());
    if (o.Infrastructure())
    {
        net.accessPoint.Create(1);
        Ssid ssid("netloop");
        net.mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "ActiveProbing", BooleanValue(false),
                        "QosSupported", BooleanValue(o.qos));
        net.tapped = net.wifi.Install(net.phy, net.mac, net.stations);
        net.mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid), "QosSupported", BooleanValue(o.qos));
        net.all.Add(net.tapped);
        net.all.Add(net.wifi.Install(net.phy, net.mac, net.accessPoint));
    }
    else
    {
        net.mac.SetType("ns3::AdhocWifiMac", "QosSupported", BooleanValue(o.qos));
        net.tapped = net.wifi.Install(net.phy, net.mac, net.stations);
        net.all.Add(net.tapped);
    }

    MobilityHelper mobility;
    mobility.SetPositionAllocator(Positions(o));
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(net.stations);
    mobility.Install(net.accessPoint);
}

void
InstallTapBridges(const WifiOptions& o, WifiNetwork& net)
{
    TapBridgeHelper bridge;
    bridge.SetAttribute("Mode", StringValue("ConfigureLocal"));
    for (uint32_t i = 0; i < net.stations.GetN(); ++i)
    {
        bridge.SetAttribute("DeviceName", StringValue(o.taps[i]));
        bridge.SetAttribute("IpAddress", Ipv4AddressValue(o.ips[i].c_str()));
        bridge.SetAttribute("Netmask", Ipv4MaskValue(o.netmask.c_str()));
        bridge.Install(net.stations.Get(i), net.tapped.Get(i));
    }
}

bool
StationsAssociated(const NetDeviceContainer& tapped)
{
    for (uint32_t i = 0; i < tapped.GetN(); ++i)
    {
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(tapped.Get(i));
        Ptr<StaWifiMac> sta = DynamicCast<StaWifiMac>(dev->GetMac());
        if (sta && !sta->IsAssociated())
        {
            return false;
        }
    }
    return true;
}

} // namespace netloop::wifi
