// 802.11e classification without ns-3: which user priority (UP, 0..7, the 802.1D priority a QoS
// data frame carries as its TID) and which access category a frame gets from its IP header's
// DS field, the way Linux's mac80211 picks them for a WMM peer (cfg80211_classify8021d in
// net/wireless/util.c since Linux 6.7, with the AF3x correction of 6.11: RFC 8325's mapping).
// Unit-tested in test/cpp/test_wifi_link.cpp; qos_classifier.h applies it inside ns-3.
#pragma once

#include <cstddef>
#include <cstdint>

namespace netloop::wifi
{

/// The four EDCA access categories, numbered as ns-3's AcIndex (AC_BE = 0 ... AC_VO = 3).
enum class AccessCategory : uint8_t
{
    kBestEffort = 0,
    kBackground = 1,
    kVideo = 2,
    kVoice = 3,
};

constexpr size_t kAccessCategories = 4;

/// "BE", "BK", "VI" or "VO".
const char* AccessCategoryName(AccessCategory ac);

/// The user priority of a packet whose DS field (IPv4 TOS byte, IPv6 traffic class) is
/// `dsField`; its two ECN bits are ignored. The DSCP's three high bits (RFC 8325 section 2.3),
/// except: AF11-13 and CS2 -> 0, AF21-23 -> 3, CS3 and AF31-33 -> 4, VA and EF -> 6, CS6 -> 7.
uint8_t UserPriorityOfDsField(uint8_t dsField);

/// The access category of user priority `up` (IEEE 802.11 Table 10-1; Linux's
/// ieee802_1d_to_ac, ns-3's QosUtilsMapTidToAc): 1, 2 -> BK; 0, 3 -> BE; 4, 5 -> VI; 6, 7 -> VO.
AccessCategory AccessCategoryOfUserPriority(uint8_t up);

/// The user priority of a frame as a Wi-Fi MAC is handed it: an 8-byte LLC/SNAP header (its
/// last two bytes the EtherType), then the network packet. As in Linux: IPv4 and IPv6 by their
/// DS field, MPLS by its first label's traffic class, IEEE 802.21 always 7, anything else (ARP,
/// a frame too short to tell) 0.
uint8_t UserPriorityOfLlcFrame(const uint8_t* bytes, size_t length);

} // namespace netloop::wifi
