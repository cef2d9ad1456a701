#include "background_traffic.h"

#include "ns3/double.h"
#include "ns3/mobility-helper.h"
#include "ns3/packet.h"
#include "ns3/position-allocator.h"
#include "ns3/simulator.h"

namespace netloop::wifi
{

using namespace ns3;

namespace
{

/// EtherType of the background frames (IEEE 802 local experimental): the receiving node has
/// no handler for it, so the frames are ACKed by the MAC and then discarded.
const uint16_t kBackgroundEtherType = 0x88B5;

} // namespace

void
BackgroundTraffic::Install(const WifiOptions& o, WifiNetwork& net)
{
    if (o.backgroundPairs == 0)
    {
        return;
    }
    m_nodes.Create(2 * o.backgroundPairs);
    NetDeviceContainer devices = net.wifi.Install(net.phy, net.mac, m_nodes);
    Ptr<ListPositionAllocator> positions = CreateObject<ListPositionAllocator>();
    for (uint32_t k = 0; k < o.backgroundPairs; ++k)
    {
        positions->Add(Vector(0.0, (k + 1) * o.distance, 0.0));
        positions->Add(Vector(o.distance, (k + 1) * o.distance, 0.0));
    }
    MobilityHelper mobility;
    mobility.SetPositionAllocator(positions);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(m_nodes);

    const double meanGap = o.backgroundBytes * 8.0 / (o.backgroundMbit * 1e6);
    for (uint32_t k = 0; k < o.backgroundPairs; ++k)
    {
        Pair b;
        b.from = devices.Get(2 * k);
        b.to = devices.Get(2 * k + 1)->GetAddress();
        b.bytes = o.backgroundBytes;
        b.gap = CreateObject<ExponentialRandomVariable>();
        b.gap->SetAttribute("Mean", DoubleValue(meanGap));
        m_pairs.push_back(b);
    }
    m_counts.pairs = m_pairs.size();
    for (size_t k = 0; k < m_pairs.size(); ++k)
    {
        Simulator::Schedule(Seconds(o.warmup + m_pairs[k].gap->GetValue()),
                            &BackgroundTraffic::Send,
                            this,
                            k);
    }
}

void
BackgroundTraffic::Send(size_t k)
{
    Pair& b = m_pairs[k];
    ++m_counts.offered;
    if (b.from->Send(Create<Packet>(b.bytes), b.to, kBackgroundEtherType))
    {
        ++m_counts.sent;
    }
    else
    {
        ++m_counts.dropped;
    }
    Simulator::Schedule(Seconds(b.gap->GetValue()), &BackgroundTraffic::Send, this, k);
}

} // namespace netloop::wifi
