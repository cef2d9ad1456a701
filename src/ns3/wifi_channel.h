// The radio side of netloop_wifi_link: the 802.11 standard and rate manager, the YANS channel
// and PHY (propagation, --range, --tx-power), and the data-frame error model through which the
// configured frame error rate and the control input's loss bursts lose frames on the air.
#pragma once

#include "control_input.h"
#include "wifi_options.h"
#include "wifi_stats.h"

#include "ns3/error-model.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device-container.h"
#include "ns3/random-variable-stream.h"
#include "ns3/wifi-helper.h"
#include "ns3/yans-wifi-helper.h"

#include <cstdint>
#include <map>
#include <vector>

namespace netloop::wifi
{

/// The ns-3 standard, the non-HT rate of control frames and the channel of --standard.
struct StandardChoice
{
    ns3::WifiStandard standard;
    const char* controlMode;
    const char* channelSettings; // "" = the standard's default channel
};

/// The choice for a --standard that ValidateOptions accepted.
StandardChoice ChooseStandard(const std::string& name);

/// The standard and the rate manager (--manager, --rate) of every device.
void ConfigureWifi(const WifiOptions& o, const StandardChoice& choice, ns3::WifiHelper& wifi);

/// One YANS channel (constant-speed delay, the --range cut-off, log-distance loss) and the
/// PHY on it (--tx-power; the standard's channel).
void ConfigurePhy(const WifiOptions& o, const StandardChoice& choice, ns3::YansWifiPhyHelper& phy);

/// Node index of each device's MAC address: whose frame a received frame is.
using SenderIndex = std::map<ns3::Mac48Address, uint32_t>;

/// Drops received data frames (MPDUs); control frames (ACK, RTS, CTS) and management
/// frames pass. Installed as the PHY's post-reception error model, so each lost data frame
/// costs one MAC retry (up to the retry limit). burst = 1: each frame is lost independently
/// with probability `rate`; burst > 1: a two-state (Gilbert-Elliott) channel whose bad state
/// loses every frame and lasts `burst` frames on average, entered so that the long-run
/// fraction of lost frames is still `rate`. Then the loss bursts of the control input, by the
/// frame's sender. Losses are counted in the receiving node's counters.
class DataFrameErrorModel : public ns3::ErrorModel
{
  public:
    /// `counters`, `bursts` and `senders` must outlive the simulation.
    DataFrameErrorModel(double rate,
                        double burst,
                        NodeCounters* counters,
                        const LossBursts* bursts,
                        const SenderIndex* senders);

  private:
    bool DoCorrupt(ns3::Ptr<ns3::Packet> p) override;

    void DoReset() override
    {
    }

    double m_rate;
    NodeCounters* m_counters;
    const LossBursts* m_bursts;
    const SenderIndex* m_senders;
    ns3::Ptr<ns3::UniformRandomVariable> m_rv;
    double m_enterBad = -1; // < 0: independent losses
    double m_leaveBad = 0;
    bool m_bad = false;
};

/// The error models of the nodes' devices and the loss-burst state they share.
class ChannelErrors
{
  public:
    /// A DataFrameErrorModel on each of `devices` (node i counts into counters[i]); the loss
    /// bursts start at 0 for every one of them.
    void Install(const ns3::NetDeviceContainer& devices,
                 double frameErrorRate,
                 double errorBurst,
                 std::vector<NodeCounters>& counters);

    /// Set by the control input.
    LossBursts& Bursts()
    {
        return m_bursts;
    }

  private:
    LossBursts m_bursts;
    SenderIndex m_senders;
};

} // namespace netloop::wifi
