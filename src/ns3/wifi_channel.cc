#include "wifi_channel.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/string.h"
#include "ns3/wifi-mac-header.h"
#include "ns3/wifi-net-device.h"

namespace netloop::wifi
{

using namespace ns3;

StandardChoice
ChooseStandard(const std::string& name)
{
    if (name == "80211a")
    {
        return {WIFI_STANDARD_80211a, "OfdmRate6Mbps", ""};
    }
    if (name == "80211g")
    {
        return {WIFI_STANDARD_80211g, "ErpOfdmRate6Mbps", ""};
    }
    NS_ABORT_MSG_UNLESS(name == "80211n", "unknown standard " << name);
    return {WIFI_STANDARD_80211n, "ErpOfdmRate6Mbps", "{1, 20, BAND_2_4GHZ, 0}"};
}

void
ConfigureWifi(const WifiOptions& o, const StandardChoice& choice, WifiHelper& wifi)
{
    wifi.SetStandard(choice.standard);
    if (o.manager == "constant")
    {
        wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                     "DataMode",
                                     StringValue(o.rate),
                                     "ControlMode",
                                     StringValue(choice.controlMode));
    }
    else if (o.manager == "ideal")
    {
        wifi.SetRemoteStationManager("ns3::IdealWifiManager");
    }
    else
    {
        wifi.SetRemoteStationManager(choice.standard == WIFI_STANDARD_80211n
                                         ? "ns3::MinstrelHtWifiManager"
                                         : "ns3::MinstrelWifiManager");
    }
}

void
ConfigurePhy(const WifiOptions& o, const StandardChoice& choice, YansWifiPhyHelper& phy)
{
    YansWifiChannelHelper channel;
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    if (o.range > 0)
    {
        channel.AddPropagationLoss("ns3::RangePropagationLossModel", "MaxRange", DoubleValue(o.range));
    }
    channel.AddPropagationLoss("ns3::LogDistancePropagationLossModel");

    phy.SetChannel(channel.Create());
    phy.Set("TxPowerStart", DoubleValue(o.txPower));
    phy.Set("TxPowerEnd", DoubleValue(o.txPower));
    if (*choice.channelSettings)
    {
        phy.Set("ChannelSettings", StringValue(choice.channelSettings));
    }
}

DataFrameErrorModel::DataFrameErrorModel(double rate,
                                         double burst,
                                         NodeCounters* counters,
                                         const LossBursts* bursts,
                                         const SenderIndex* senders)
    : m_rate(rate),
      m_counters(counters),
      m_bursts(bursts),
      m_senders(senders),
      m_rv(CreateObject<UniformRandomVariable>())
{
    if (burst > 1)
    {
        m_leaveBad = 1.0 / burst;
        m_enterBad = rate / (1.0 - rate) * m_leaveBad;
    }
}

bool
DataFrameErrorModel::DoCorrupt(Ptr<Packet> p)
{
    WifiMacHeader hdr;
    if (p->PeekHeader(hdr) == 0 || !hdr.IsData())
    {
        return false;
    }
    bool lost;
    if (m_rate <= 0)
    {
        lost = false;
    }
    else if (m_enterBad < 0)
    {
        lost = m_rv->GetValue() < m_rate;
    }
    else
    {
        m_bad = m_bad ? m_rv->GetValue() >= m_leaveBad : m_rv->GetValue() < m_enterBad;
        lost = m_bad;
    }
    if (lost)
    {
        m_counters->corrupted++;
        return true;
    }
    auto sender = m_senders->find(hdr.GetAddr2());
    double burst = m_bursts->ForSender(sender == m_senders->end() ? -1 : long(sender->second));
    if (burst > 0 && m_rv->GetValue() < burst)
    {
        m_counters->burstCorrupted++;
        return true;
    }
    return false;
}

void
ChannelErrors::Install(const NetDeviceContainer& devices,
                       double frameErrorRate,
                       double errorBurst,
                       std::vector<NodeCounters>& counters)
{
    for (uint32_t i = 0; i < devices.GetN(); ++i)
    {
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(devices.Get(i));
        // always installed: the configured frame error rate and the loss bursts
        dev->GetPhy()->SetPostReceptionErrorModel(CreateObject<DataFrameErrorModel>(
            frameErrorRate, errorBurst, &counters[i], &m_bursts, &m_senders));
        m_senders[Mac48Address::ConvertFrom(dev->GetAddress())] = i;
    }
    m_bursts.perNode.assign(devices.GetN(), 0.0);
}

} // namespace netloop::wifi
