// Other stations on the channel (--background-pairs, ad-hoc only): pair k's first station sends
// --background-bytes frames to its partner as a Poisson stream of --background-mbit Mbit/s
// (unicast: ACKed and retried like any data frame), placed beside the line at y = (k + 1) *
// --distance, x = 0 and --distance: in range of, and contending with, the tapped nodes.
#pragma once

#include "wifi_options.h"
#include "wifi_stats.h"
#include "wifi_topology.h"

#include "ns3/address.h"
#include "ns3/net-device.h"
#include "ns3/node-container.h"
#include "ns3/random-variable-stream.h"

#include <cstdint>
#include <vector>

namespace netloop::wifi
{

class BackgroundTraffic
{
  public:
    BackgroundTraffic() = default;
    BackgroundTraffic(const BackgroundTraffic&) = delete;
    BackgroundTraffic& operator=(const BackgroundTraffic&) = delete;

    /// Adds the pairs to `net`'s channel (its helpers, the ad-hoc MAC) and schedules their
    /// first frames after --warmup. Nothing without --background-pairs. The scheduled events
    /// point to this object: it must outlive the simulation.
    void Install(const WifiOptions& o, WifiNetwork& net);

    /// For the stats line ("background"; pairs = 0: none).
    BackgroundCounts Counts() const
    {
        return m_counts;
    }

  private:
    struct Pair
    {
        ns3::Ptr<ns3::NetDevice> from;
        ns3::Address to;
        uint32_t bytes = 1000;
        ns3::Ptr<ns3::ExponentialRandomVariable> gap; // seconds between frames
    };

    /// One frame of pair k, then the next one scheduled.
    void Send(size_t k);

    ns3::NodeContainer m_nodes;
    std::vector<Pair> m_pairs;
    BackgroundCounts m_counts;
};

} // namespace netloop::wifi
