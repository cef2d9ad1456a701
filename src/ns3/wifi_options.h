// The options of netloop_wifi_link (its command line, see wifi_link.cc) and their checks.
// No ns-3 here: the checks are unit-tested (test/cpp/test_wifi_link.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace netloop::wifi
{

/// Every option of the program, with its default. wifi_link.cc maps them to `--names`.
struct WifiOptions
{
    std::vector<std::string> taps; // --taps, in order: positions, stats "nodes", control input
    std::vector<std::string> ips;  // --ips, one per tap
    std::string netmask = "255.255.255.0";
    std::string standard = "80211a"; // 80211a, 80211g, 80211n
    std::string mode = "adhoc";      // adhoc, ap
    std::string manager = "constant"; // constant, ideal, minstrel
    std::string rate = "OfdmRate6Mbps";
    std::string layout = "line"; // line, star
    std::string statsPath;
    double distance = 10.0;
    double range = 0.0;
    double txPower = 16.0206;
    double statsInterval = 1.0;
    double probeMs = 1.0;
    double lagBoundMs = 5.0;
    double warmup = 0.5;
    double duration = 0.0;
    uint32_t rtsThreshold = 65535;
    uint32_t queuePackets = 500;
    uint32_t seed = 1;
    double frameErrorRate = 0.0;
    double errorBurst = 1.0;
    uint32_t retryLimit = 7;
    uint32_t backgroundPairs = 0;
    double backgroundMbit = 0.0;
    uint32_t backgroundBytes = 1000;
    uint32_t smallBytes = 1200; // "small" packets in the queue statistics (e.g. a 1 KB laser scan)
    bool qos = false; // 802.11e: QoS MACs (EDCA), frames classified by DSCP (qos_classifier.h)
    // the hosts' NICs under flow control (host_nic.h, nic_queue.h): each tap's host namespace
    // (empty: no flow control, the host's kernel sends straight into the tap)
    std::vector<std::string> nicNetns;
    uint32_t nicRingFrames = 2;          // frames a device holds before its host's queue stops
    uint32_t nicLimit = 1000;            // packets the host's queue holds (the kernel drops beyond)
    std::vector<uint8_t> nicPriorityDscp; // DSCPs released before the others
    std::vector<double> nicPacketUs;      // per tap: the NIC's time per packet it sends [us]

    /// --mode ap: the tapped nodes are stations of an access point inside ns-3.
    bool Infrastructure() const
    {
        return mode == "ap";
    }

    /// --layout star: the hub at the origin, the other stations on a circle around it.
    bool Star() const
    {
        return layout == "star";
    }
};

/// The non-empty items of a comma-separated list.
std::vector<std::string> SplitList(const std::string& s);

/// The first problem with `o` (the text after "netloop_wifi_link: "), or "" when it is fine.
std::string ValidateOptions(const WifiOptions& o);

} // namespace netloop::wifi
