// A station leaving the network and rejoining it: the control input's `down <k>`, `up <k>` and
// `open <k>` (netloop's faults of kind interface_down, when node k's host brings its interface
// down and up again).
//
// down (before netloop brings the host's tap down): the station leaves the air: it is moved
// far out of everyone's radio range, so it neither hears nor is heard (its peers' frames to it
// go unacknowledged and are retried until the retry limit, as with a card that is off); the
// frames waiting in its MAC queues are dropped (as a driver's are when the interface goes
// down); in an infrastructure network it leaves the BSS (ns-3 3.37's StaWifiMac has no public
// disassociation: it is told what a channel switch tells it, which disassociates it and
// starts a new scan); and its tap is closed: what the station receives is dropped instead of
// written to the tap (ns-3's TapBridge aborts the program when it writes to a tap that is
// down). (Switching its PHY off instead, WifiPhy::SetOffMode, aborts ns-3 3.37 as soon as the
// scanning StaWifiMac transmits: "Invalid WifiPhy state".)
// up (before netloop brings the tap up, so that the host's first frames find the station on
// the air): the station returns to its place. In an infrastructure network it must then find
// the access point again (a beacon: passive scanning) and associate (association request and
// response): "associated" is written when StaWifiMac reports it. ns-3's ad-hoc MAC
// (AdhocWifiMac) has no join procedure at all (no IBSS beacons, no scan, no merge): the
// station talks again at once, and "joined" is written then.
// open (after the tap is up): what the station receives reaches the tap again. The first frame
// the host sends through the tap after `up` opens it too (the tap must be up to send it), so a
// reply to it is never dropped while `open` is on its way.
//
// Every change is a "station" line in the stats file (wifi_stats.h, FormatStationLine).
#pragma once

#include "control_input.h"
#include "wifi_stats.h"

#include "ns3/mac48-address.h"
#include "ns3/net-device-container.h"
#include "ns3/net-device.h"
#include "ns3/packet.h"
#include "ns3/tap-bridge.h"
#include "ns3/vector.h"

#include <string>
#include <vector>

namespace netloop::wifi
{

class StationPresence
{
  public:
    explicit StationPresence(StatsFile& stats)
        : m_stats(stats)
    {
    }

    /// Watches `tapped` (the stations' devices, in --taps order, each bridged to its tap by a
    /// TapBridge: call after InstallTapBridges): their association (StaWifiMac; none in ad-hoc
    /// mode), what they send, and what they receive on its way to the tap.
    void Install(const ns3::NetDeviceContainer& tapped);

    /// Applies a `down`/`up`/`open` line; returns an error text, empty when applied.
    std::string Switch(const StationSwitch& s);

  private:
    struct Station
    {
        ns3::Ptr<ns3::TapBridge> bridge;
        ns3::Vector home;  // where it stood before it left
        bool down = false; // between `down` and `up`
        bool open = true;  // what it receives goes to its tap
    };

    void Leave(uint32_t k);
    void Rejoin(uint32_t k);
    void Open(uint32_t k);
    bool FromAir(ns3::Ptr<ns3::NetDevice> device,
                 ns3::Ptr<const ns3::Packet> packet,
                 uint16_t protocol,
                 const ns3::Address& src,
                 const ns3::Address& dst,
                 ns3::NetDevice::PacketType type);
    void FromTap(std::string context, ns3::Ptr<const ns3::Packet> packet);
    void OnAssociation(std::string context, ns3::Mac48Address ap);
    void OnDisassociation(std::string context, ns3::Mac48Address ap);
    void Event(long node, const char* event);

    StatsFile& m_stats;
    ns3::NetDeviceContainer m_tapped;
    std::vector<Station> m_stations;
};

} // namespace netloop::wifi
