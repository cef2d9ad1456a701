// The hosts' emulated NICs under flow control (nic_queue.h): for each tapped station, a netfilter
// queue socket opened in its host's network namespace (--nic-netns), a reader thread that hands
// the packets the host queued to the simulator, and the device's traces that free room in its
// ring (a frame acknowledged or given up) and count the host's packets arriving at it.
#pragma once

#include "nic_queue.h"
#include "wifi_options.h"

#include "ns3/event-id.h"
#include "ns3/fd-reader.h"
#include "ns3/net-device-container.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"
#include "ns3/wifi-mac-queue.h"
#include "ns3/wifi-mpdu.h"
#include "ns3/wifi-net-device.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace netloop::wifi
{

class HostNics
{
  public:
    HostNics() = default;
    HostNics(const HostNics&) = delete;
    HostNics& operator=(const HostNics&) = delete;
    ~HostNics();

    /// With --nic-netns, one NIC queue per device of `tapped`: binds queue 0 of each host's
    /// namespace. False with `error` set when a namespace or its queue cannot be opened.
    bool Install(const WifiOptions& o, const ns3::NetDeviceContainer& tapped, std::string& error);

    /// Starts the reader threads (the simulator must be the real-time one by then).
    void Start();

    bool Active() const
    {
        return !m_nics.empty();
    }

    /// A backlog sample of every NIC queue (at each lag probe).
    void Sample();

    /// Station k's host brought its interface down: the kernel dropped its queue.
    void Flush(uint32_t k);

    /// Node k's counts (nullptr when k has no NIC queue).
    NicCounts* Counts(uint32_t k);

    void EndInterval();

  private:
    struct Nic
    {
        Nic(uint32_t ringFrames, double transitS, std::vector<uint8_t> priority, double packetS)
            : queue(ringFrames, transitS, std::move(priority), packetS)
        {
        }

        int fd = -1;
        uint32_t node = 0; // ns-3 node id: the context of the events scheduled for it
        ns3::Ptr<ns3::WifiNetDevice> device;
        std::vector<ns3::Ptr<ns3::WifiMacQueue>> macQueues;
        NicQueue queue;
        ns3::Ptr<ns3::FdReader> reader;
        ns3::EventId wake; // the NIC's next packet after its time per packet
    };

    /// On a reader thread: the packets of one recv() go to the simulator.
    void Read(size_t k, uint8_t* buf, ssize_t len);
    /// In the simulator: the packets the host queued join its NIC queue.
    void Queued(size_t k, std::vector<nfq::QueuedPacket> packets);
    /// Lets through what the device has room for.
    void Pump(size_t k);
    uint32_t DeviceFrames(const Nic& nic) const;
    /// MacTx: a packet from the tap reached the device.
    void FromHost(size_t k, ns3::Ptr<const ns3::Packet> packet);
    /// A frame left the device's queue (acknowledged, given up, or dropped).
    void Left(size_t k, ns3::Ptr<const ns3::WifiMpdu> mpdu);

    std::vector<std::unique_ptr<Nic>> m_nics; // by tapped node; empty without --nic-netns
};

} // namespace netloop::wifi
