#include "qos_classifier.h"

#include "user_priority.h"

#include "ns3/callback.h"
#include "ns3/qos-utils.h"
#include "ns3/socket.h"
#include "ns3/wifi-mac-queue.h"
#include "ns3/wifi-mac.h"
#include "ns3/wifi-mpdu.h"
#include "ns3/wifi-net-device.h"

namespace netloop::wifi
{

using namespace ns3;

static_assert(uint8_t(AccessCategory::kBestEffort) == AC_BE &&
                  uint8_t(AccessCategory::kBackground) == AC_BK &&
                  uint8_t(AccessCategory::kVideo) == AC_VI && uint8_t(AccessCategory::kVoice) == AC_VO,
              "AccessCategory follows ns-3's AcIndex");

namespace
{

/// LLC/SNAP (8 bytes) and the first bytes of the network header: enough for the DS field of
/// IPv4 and IPv6 and an MPLS label.
constexpr uint32_t kHeadBytes = 8 + 4;

/// The MacTx sink: the SocketPriorityTag of the frame's DS field (a frame that already has one
/// keeps it).
void
Classify(Ptr<const Packet> packet)
{
    SocketPriorityTag tag;
    if (packet->PeekPacketTag(tag))
    {
        return;
    }
    uint8_t head[kHeadBytes];
    const uint32_t n = packet->CopyData(head, kHeadBytes);
    tag.SetPriority(UserPriorityOfLlcFrame(head, n));
    packet->AddPacketTag(tag);
}

/// The Enqueue sink of one access category's queue.
void
CountEnqueue(uint64_t* frames, Ptr<const WifiMpdu>)
{
    ++*frames;
}

} // namespace

void
InstallQosClassifier(const NetDeviceContainer& tapped,
                     const NetDeviceContainer& all,
                     std::vector<NodeCounters>& counters)
{
    for (uint32_t i = 0; i < tapped.GetN(); ++i)
    {
        Ptr<WifiMac> mac = DynamicCast<WifiNetDevice>(tapped.Get(i))->GetMac();
        mac->TraceConnectWithoutContext("MacTx", MakeCallback(&Classify));
    }
    for (uint32_t i = 0; i < all.GetN(); ++i)
    {
        Ptr<WifiMac> mac = DynamicCast<WifiNetDevice>(all.Get(i))->GetMac();
        if (!mac->GetQosSupported())
        {
            continue;
        }
        counters[i].qos = true;
        for (AcIndex ac : {AC_BE, AC_BK, AC_VI, AC_VO})
        {
            mac->GetTxopQueue(ac)->TraceConnectWithoutContext(
                "Enqueue",
                MakeBoundCallback(&CountEnqueue, &counters[i].acEnqueued[ac]));
        }
    }
}

} // namespace netloop::wifi
