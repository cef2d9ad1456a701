// The queue in front of a host's emulated Wi-Fi NIC, under the NIC's flow control. No ns-3 here:
// host_nic.h feeds it from the host's netfilter queue and from the device's traces;
// unit-tested in test/cpp/test_wifi_gate.cpp.
//
// A real driver stops its queue when its ring of transmit descriptors is full and wakes it as
// the card completes frames, so the host's qdisc (and, through TCP Small Queues, its sockets)
// holds the backlog and drains at the pace the air allows. The kernel here cannot stop a tap's
// queue, so every packet a host sends to its tap waits in the host's netfilter queue first
// (an iptables NFQUEUE rule on net0), still the kernel's and still counted by TCP Small Queues,
// until the device has room: fewer than `ringFrames` frames in its MAC queue (the one being
// sent, and retried, included) and on their way to it. Marked packets (a DSCP of `priority`)
// go before unmarked ones, each class first in, first out, as the hosts' htb priority band did.
// A NIC that spends time on each packet it takes (`packetS`: a Raspberry Pi's SDIO bus and
// firmware) takes the next one that much later, however much room its ring has.
#pragma once

#include "nfqueue.h"
#include "wifi_stats.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace netloop::wifi
{

class NicQueue
{
  public:
    /// `ringFrames`: frames the device may hold (at least 1); a released packet that has not
    /// reached the device after `transitS` seconds is taken as lost on the way (e.g. dropped
    /// by an outage's zero-length qdisc). `priority`: the DSCPs served first. `packetS`: the
    /// NIC's time per packet (0: none).
    NicQueue(uint32_t ringFrames, double transitS, std::vector<uint8_t> priority, double packetS = 0.0);

    /// The kernel queued `p` for the device.
    void Queued(const nfq::QueuedPacket& p);

    /// The ids of the packets to let through at `now` [s], the device holding `deviceFrames`.
    std::vector<uint32_t> Release(double now, uint32_t deviceFrames);

    /// When the NIC can take its next packet [s] (its time per packet after the last one).
    double NextFree() const
    {
        return m_nextFree;
    }

    /// A frame from the host reached the device at `now` [s] (the oldest still on its way).
    void ReachedDevice(double now);

    /// The device holds `deviceFrames` at `now` [s]: counts the time it held none while a frame
    /// was on its way to it (Counts().starvedS), the air this station lost to the emulation's
    /// hop from the host. Call at every change of either.
    void Observe(double now, uint32_t deviceFrames);

    /// The frames a packet of `bytes` (its IP length) becomes on a 1500-byte MTU: the kernel
    /// fragments a datagram above it after the netfilter hook.
    static uint32_t Frames(uint32_t bytes);

    /// The host's interface went down: the kernel dropped what waited.
    void Flush();

    /// Packets waiting for the device's room.
    size_t Backlog() const
    {
        return m_marked.size() + m_unmarked.size();
    }

    /// Packets released and not yet at the device.
    size_t InTransit() const
    {
        return m_transit.size();
    }

    void Sample();

    NicCounts& Counts()
    {
        return m_counts;
    }

  private:
    bool Marked(uint8_t dscp) const;

    uint32_t m_ringFrames;
    double m_transitS;
    std::vector<uint8_t> m_priority;
    double m_packetS;
    double m_nextFree = 0.0;
    struct Waiting
    {
        uint32_t id;
        uint32_t frames; // the IP fragments it becomes (a datagram above the MTU)
    };

    std::deque<Waiting> m_marked;
    std::deque<Waiting> m_unmarked;
    std::deque<double> m_transit; // release times of the frames on their way (one per fragment)
    double m_starvedSince = -1.0; // since when the device has been empty with a frame on its way
    NicCounts m_counts;
};

} // namespace netloop::wifi
