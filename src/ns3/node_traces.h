// The per-node counters of netloop_wifi_link's stats lines, fed by ns-3's trace sources: MAC
// packets in and out, queue drops, retries and final failures, PHY drops, data frames on the
// air, and the MAC (device) queue as sampled and as seen by arriving packets.
#pragma once

#include "wifi_stats.h"

#include "ns3/net-device-container.h"
#include "ns3/ptr.h"
#include "ns3/wifi-mac-queue.h"
#include "ns3/wifi-mpdu.h"

#include <cstdint>
#include <vector>

namespace netloop::wifi
{

class NodeTraces
{
  public:
    explicit NodeTraces(uint32_t smallBytes)
        : m_smallBytes(smallBytes)
    {
    }

    NodeTraces(const NodeTraces&) = delete;
    NodeTraces& operator=(const NodeTraces&) = delete;

    /// One set of counters per device of `devices` (the stats line's "nodes", in that order),
    /// connected to its MAC, remote station manager, PHY and MAC queue. Call once: the trace
    /// callbacks hold pointers into this object, which must outlive the simulation.
    void Install(const ns3::NetDeviceContainer& devices);

    /// A sample of every MAC queue's length (at each lag probe).
    void SampleQueues();

    /// After a stats line: the interval figures start again.
    void EndInterval();

    std::vector<NodeCounters>& Counters()
    {
        return m_counters;
    }

  private:
    /// What the queue's Enqueue trace needs: its node's counters and the queue itself.
    struct QueueWatch
    {
        NodeCounters* counters;
        ns3::Ptr<ns3::WifiMacQueue> queue; // the non-QoS DCF queue, or best effort's
        uint32_t smallBytes;
    };

    /// The Enqueue trace's sink: how many frames a packet found ahead of it.
    static void CountEnqueue(QueueWatch* w, ns3::Ptr<const ns3::WifiMpdu> mpdu);

    uint32_t m_smallBytes;
    std::vector<NodeCounters> m_counters;
    std::vector<QueueWatch> m_queues; // sized once in Install: callbacks point into it
};

} // namespace netloop::wifi
