#include "station_presence.h"

#include "ns3/callback.h"
#include "ns3/mobility-model.h"
#include "ns3/node.h"
#include "ns3/qos-utils.h"
#include "ns3/simulator.h"
#include "ns3/sta-wifi-mac.h"
#include "ns3/txop.h"
#include "ns3/wifi-mac-queue.h"
#include "ns3/wifi-net-device.h"

namespace netloop::wifi
{

using namespace ns3;

namespace
{

/// Metres from everything: a station put there hears nothing and is heard by no one (the
/// received power is far below any PHY's sensitivity).
constexpr double kAway = 1e5;

/// TapBridge's own receive path (protected in ns-3 3.37), reached through a derived class.
struct TapBridgeReceive : public TapBridge
{
    using Receive = bool (TapBridge::*)(Ptr<NetDevice>,
                                        Ptr<const Packet>,
                                        uint16_t,
                                        const Address&,
                                        const Address&,
                                        PacketType);

    static Receive Get()
    {
        return &TapBridgeReceive::ReceiveFromBridgedDevice;
    }
};

Ptr<WifiNetDevice>
Device(const NetDeviceContainer& tapped, uint32_t k)
{
    return DynamicCast<WifiNetDevice>(tapped.Get(k));
}

/// The TapBridge that bridges `device` to its tap.
Ptr<TapBridge>
BridgeOf(Ptr<NetDevice> device)
{
    Ptr<Node> node = device->GetNode();
    for (uint32_t i = 0; i < node->GetNDevices(); ++i)
    {
        Ptr<TapBridge> bridge = DynamicCast<TapBridge>(node->GetDevice(i));
        if (bridge && bridge->GetBridgedNetDevice() == device)
        {
            return bridge;
        }
    }
    return nullptr;
}

/// Drops every frame waiting in the MAC's queues (one per access category with QoS).
void
FlushQueues(Ptr<WifiMac> mac)
{
    if (!mac->GetQosSupported())
    {
        mac->GetTxop()->GetWifiMacQueue()->Flush();
        return;
    }
    for (AcIndex ac : {AC_BE, AC_BK, AC_VI, AC_VO})
    {
        mac->GetTxopQueue(ac)->Flush();
    }
}

} // namespace

void
StationPresence::Install(const NetDeviceContainer& tapped)
{
    m_tapped = tapped;
    m_stations.assign(tapped.GetN(), Station());
    for (uint32_t k = 0; k < tapped.GetN(); ++k)
    {
        Ptr<WifiNetDevice> dev = Device(tapped, k);
        const std::string context = std::to_string(k);
        m_stations[k].bridge = BridgeOf(dev);
        // in place of the TapBridge's own callback, which forwards to it when the tap is open
        dev->SetPromiscReceiveCallback(MakeCallback(&StationPresence::FromAir, this));
        dev->GetMac()->TraceConnect("MacTx", context, MakeCallback(&StationPresence::FromTap, this));
        Ptr<StaWifiMac> sta = DynamicCast<StaWifiMac>(dev->GetMac());
        if (sta)
        {
            sta->TraceConnect("Assoc", context, MakeCallback(&StationPresence::OnAssociation, this));
            sta->TraceConnect("DeAssoc", context, MakeCallback(&StationPresence::OnDisassociation, this));
        }
    }
}

std::string
StationPresence::Switch(const StationSwitch& s)
{
    const auto k = static_cast<uint32_t>(s.node);
    if (k >= m_stations.size())
    {
        return "no node " + std::to_string(s.node);
    }
    const bool down = m_stations[k].down;
    const std::string node = "node " + std::to_string(k);
    if (s.action == StationSwitch::kDown && down)
    {
        return node + " is already down";
    }
    if (s.action == StationSwitch::kUp && !down)
    {
        return node + " is already up";
    }
    if (s.action == StationSwitch::kOpen && down)
    {
        return node + " is down: 'up' first";
    }
    switch (s.action)
    {
    case StationSwitch::kDown:
        Leave(k);
        break;
    case StationSwitch::kUp:
        Rejoin(k);
        break;
    default:
        Open(k);
    }
    return "";
}

void
StationPresence::Leave(uint32_t k)
{
    Ptr<WifiNetDevice> dev = Device(m_tapped, k);
    Station& st = m_stations[k];
    st.down = true;
    st.open = false;
    Ptr<StaWifiMac> sta = DynamicCast<StaWifiMac>(dev->GetMac());
    if (sta && sta->IsAssociated())
    {
        sta->NotifyChannelSwitching(0); // disassociates (the DeAssoc trace) and scans again
    }
    Ptr<MobilityModel> where = dev->GetNode()->GetObject<MobilityModel>();
    st.home = where->GetPosition();
    where->SetPosition(Vector(kAway, kAway, 0.0));
    FlushQueues(dev->GetMac());
    Event(k, "left");
}

void
StationPresence::Rejoin(uint32_t k)
{
    Ptr<WifiNetDevice> dev = Device(m_tapped, k);
    m_stations[k].down = false;
    dev->GetNode()->GetObject<MobilityModel>()->SetPosition(m_stations[k].home);
    Event(k, "rejoining");
    if (!DynamicCast<StaWifiMac>(dev->GetMac()))
    {
        Event(k, "joined"); // AdhocWifiMac: no join procedure, the station is back at once
    }
}

void
StationPresence::Open(uint32_t k)
{
    if (!m_stations[k].open)
    {
        m_stations[k].open = true;
        Event(k, "open");
    }
}

bool
StationPresence::FromAir(Ptr<NetDevice> device,
                         Ptr<const Packet> packet,
                         uint16_t protocol,
                         const Address& src,
                         const Address& dst,
                         NetDevice::PacketType type)
{
    for (Station& st : m_stations)
    {
        if (st.bridge && st.bridge->GetBridgedNetDevice() == device)
        {
            if (!st.open)
            {
                return true; // the host's interface is down: nothing is written to its tap
            }
            return (PeekPointer(st.bridge)->*TapBridgeReceive::Get())(device, packet, protocol, src, dst, type);
        }
    }
    return true;
}

void
StationPresence::FromTap(std::string context, Ptr<const Packet>)
{
    const auto k = static_cast<uint32_t>(std::stoul(context));
    if (!m_stations[k].down)
    {
        Open(k); // the tap is up: the host sent through it
    }
}

void
StationPresence::OnAssociation(std::string context, Mac48Address)
{
    Event(std::stol(context), "associated");
}

void
StationPresence::OnDisassociation(std::string context, Mac48Address)
{
    Event(std::stol(context), "disassociated");
}

void
StationPresence::Event(long node, const char* event)
{
    if (m_stats.IsOpen())
    {
        m_stats.Write(FormatStationLine(WallNow(), Simulator::Now().GetSeconds(), node, event));
    }
}

} // namespace netloop::wifi
