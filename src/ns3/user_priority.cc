#include "user_priority.h"

namespace netloop::wifi
{

namespace
{

constexpr size_t kLlcSnapBytes = 8;
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeMplsUnicast = 0x8847;
constexpr uint16_t kEtherTypeMplsMulticast = 0x8848;
constexpr uint16_t kEtherType80221 = 0x8917; // IEEE 802.21: network control, always 7

} // namespace

const char*
AccessCategoryName(AccessCategory ac)
{
    switch (ac)
    {
    case AccessCategory::kBackground:
        return "BK";
    case AccessCategory::kVideo:
        return "VI";
    case AccessCategory::kVoice:
        return "VO";
    default:
        return "BE";
    }
}

uint8_t
UserPriorityOfDsField(uint8_t dsField)
{
    const uint8_t dscp = dsField >> 2;
    switch (dscp)
    {
    case 10: // AF11: high-throughput data
    case 12: // AF12
    case 14: // AF13
    case 16: // CS2: operations, administration and maintenance
        return 0;
    case 18: // AF21: low-latency data
    case 20: // AF22
    case 22: // AF23
        return 3;
    case 24: // CS3: broadcast video
    case 26: // AF31: multimedia streaming
    case 28: // AF32
    case 30: // AF33
        return 4;
    case 44: // VA: voice admit
    case 46: // EF: telephony
        return 6;
    case 48: // CS6: network control
        return 7;
    default: // e.g. CS0 -> 0, CS1 -> 1, CS4/AF4x -> 4, CS5 -> 5, CS7 -> 7
        return dscp >> 3;
    }
}

AccessCategory
AccessCategoryOfUserPriority(uint8_t up)
{
    switch (up & 7)
    {
    case 1:
    case 2:
        return AccessCategory::kBackground;
    case 4:
    case 5:
        return AccessCategory::kVideo;
    case 6:
    case 7:
        return AccessCategory::kVoice;
    default:
        return AccessCategory::kBestEffort;
    }
}

uint8_t
UserPriorityOfLlcFrame(const uint8_t* bytes, size_t length)
{
    if (length < kLlcSnapBytes + 2)
    {
        return 0;
    }
    const uint16_t etherType = uint16_t(bytes[6] << 8 | bytes[7]);
    const uint8_t* ip = bytes + kLlcSnapBytes;
    if (etherType == kEtherTypeIpv4 && (ip[0] >> 4) == 4)
    {
        return UserPriorityOfDsField(ip[1]);
    }
    if (etherType == kEtherTypeIpv6 && (ip[0] >> 4) == 6)
    {
        return UserPriorityOfDsField(uint8_t((ip[0] & 0x0f) << 4 | ip[1] >> 4));
    }
    if ((etherType == kEtherTypeMplsUnicast || etherType == kEtherTypeMplsMulticast) &&
        length >= kLlcSnapBytes + 4)
    {
        return (ip[2] >> 1) & 7; // the first label's traffic class
    }
    return etherType == kEtherType80221 ? 7 : 0;
}

} // namespace netloop::wifi
