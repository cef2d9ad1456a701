#include "node_traces.h"

#include "ns3/callback.h"
#include "ns3/mac48-address.h"
#include "ns3/packet.h"
#include "ns3/txop.h"
#include "ns3/wifi-mac.h"
#include "ns3/wifi-mpdu.h"
#include "ns3/wifi-net-device.h"
#include "ns3/wifi-phy.h"
#include "ns3/wifi-psdu.h"
#include "ns3/wifi-remote-station-manager.h"

namespace netloop::wifi
{

using namespace ns3;

namespace
{

// Trace sinks: ns-3 binds the first argument (the node's counters) when connecting.

void
CountMacTx(NodeCounters* c, Ptr<const Packet>)
{
    c->macTx++;
}

void
CountMacRx(NodeCounters* c, Ptr<const Packet>)
{
    c->macRx++;
}

void
CountQueueDrop(NodeCounters* c, Ptr<const Packet>)
{
    c->queueDrop++;
}

void
CountRetry(NodeCounters* c, Mac48Address)
{
    c->retries++;
}

void
CountFinalFail(NodeCounters* c, Mac48Address)
{
    c->finalFail++;
}

void
CountPhyTxDrop(NodeCounters* c, Ptr<const Packet>)
{
    c->phyTxDrop++;
}

void
CountPhyRxDrop(NodeCounters* c, Ptr<const Packet>, WifiPhyRxfailureReason)
{
    c->phyRxDrop++;
}

void
CountDataMpdus(NodeCounters* c, WifiConstPsduMap psdus, WifiTxVector, double)
{
    for (const auto& entry : psdus)
    {
        bool data = false;
        for (const auto& mpdu : *entry.second)
        {
            if (mpdu->GetHeader().IsData())
            {
                c->dataMpduTx++;
                data = true;
            }
        }
        c->dataPpduTx += data; // one transmission, however many MPDUs it aggregates
    }
}

} // namespace

void
NodeTraces::CountEnqueue(QueueWatch* w, Ptr<const WifiMpdu> mpdu)
{
    uint32_t ahead = w->queue->GetNPackets();
    ahead = ahead ? ahead - 1 : 0;
    w->counters->Arrival(ahead, mpdu->GetPacketSize() <= w->smallBytes);
}

void
NodeTraces::Install(const NetDeviceContainer& devices)
{
    m_counters.assign(devices.GetN(), NodeCounters{});
    m_queues.clear();
    m_queues.reserve(devices.GetN()); // no reallocation below: the callbacks point into it
    for (uint32_t i = 0; i < devices.GetN(); ++i)
    {
        NodeCounters* c = &m_counters[i];
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(devices.Get(i));
        Ptr<WifiMac> mac = dev->GetMac();
        mac->TraceConnectWithoutContext("MacTx", MakeBoundCallback(&CountMacTx, c));
        mac->TraceConnectWithoutContext("MacRx", MakeBoundCallback(&CountMacRx, c));
        mac->TraceConnectWithoutContext("MacTxDrop", MakeBoundCallback(&CountQueueDrop, c));
        dev->GetRemoteStationManager()->TraceConnectWithoutContext(
            "MacTxDataFailed",
            MakeBoundCallback(&CountRetry, c));
        dev->GetRemoteStationManager()->TraceConnectWithoutContext(
            "MacTxFinalDataFailed",
            MakeBoundCallback(&CountFinalFail, c));
        dev->GetPhy()->TraceConnectWithoutContext("PhyTxDrop", MakeBoundCallback(&CountPhyTxDrop, c));
        dev->GetPhy()->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&CountPhyRxDrop, c));
        dev->GetPhy()->TraceConnectWithoutContext("PhyTxPsduBegin",
                                                  MakeBoundCallback(&CountDataMpdus, c));
        Ptr<WifiMacQueue> queue =
            mac->GetTxop() ? mac->GetTxop()->GetWifiMacQueue() : mac->GetTxopQueue(AC_BE);
        m_queues.push_back(QueueWatch{c, queue, m_smallBytes});
        queue->TraceConnectWithoutContext("Enqueue",
                                          MakeBoundCallback(&NodeTraces::CountEnqueue, &m_queues.back()));
    }
}

void
NodeTraces::SampleQueues()
{
    for (QueueWatch& w : m_queues)
    {
        w.counters->SampleQueue(w.queue->GetNPackets());
    }
}

void
NodeTraces::EndInterval()
{
    for (NodeCounters& c : m_counters)
    {
        c.EndInterval();
    }
}

} // namespace netloop::wifi
