#include "wifi_options.h"

#include <sstream>

namespace netloop::wifi
{

std::vector<std::string>
SplitList(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        if (!item.empty())
        {
            out.push_back(item);
        }
    }
    return out;
}

std::string
ValidateOptions(const WifiOptions& o)
{
    if (o.layout != "line" && o.layout != "star")
    {
        return "--layout " + o.layout + ": allowed line, star";
    }
    const bool star = o.Star();
    if (o.taps.size() < 2 || o.taps.size() > (star ? 17u : 3u) || o.ips.size() != o.taps.size())
    {
        return "need 2 or 3 --taps (up to 17 with --layout star) and as many --ips";
    }
    if (o.distance <= 0 || o.range < 0 || o.statsInterval <= 0 || o.probeMs <= 0)
    {
        return "distance, stats-interval and probe-ms must be > 0";
    }
    if (o.standard != "80211a" && o.standard != "80211g" && o.standard != "80211n")
    {
        return "--standard " + o.standard + ": allowed 80211a, 80211g, 80211n";
    }
    if (o.mode != "adhoc" && o.mode != "ap")
    {
        return "--mode " + o.mode + ": allowed adhoc, ap";
    }
    if (o.manager != "constant" && o.manager != "ideal" && o.manager != "minstrel")
    {
        return "--manager " + o.manager + ": allowed constant, ideal, minstrel";
    }
    if (o.frameErrorRate < 0 || o.frameErrorRate >= 1 || o.retryLimit < 1 || o.retryLimit > 255 ||
        o.errorBurst < 1)
    {
        return "need 0 <= --frame-error-rate < 1, --error-burst >= 1 and 1 <= --retry-limit <= 255";
    }
    if (o.backgroundPairs > 16 || o.backgroundMbit < 0 || o.backgroundBytes < 1 ||
        o.backgroundBytes > 2304 || (o.backgroundPairs > 0 && o.backgroundMbit <= 0))
    {
        return "need --background-pairs <= 16, --background-mbit > 0 with pairs, "
               "1 <= --background-bytes <= 2304";
    }
    if (o.Infrastructure() && o.backgroundPairs > 0)
    {
        return "--background-pairs needs --mode adhoc";
    }
    if (!o.nicNetns.empty() && o.nicNetns.size() != o.taps.size())
    {
        return "--nic-netns needs one network namespace per tap";
    }
    if (!o.nicNetns.empty() && (o.nicRingFrames < 1 || o.nicLimit < 1))
    {
        return "--nic-ring-frames and --nic-limit must be >= 1";
    }
    if (!o.nicPacketUs.empty() && (o.nicPacketUs.size() != o.taps.size() || o.nicNetns.empty()))
    {
        return "--nic-packet-us needs --nic-netns and one time per tap";
    }
    for (double us : o.nicPacketUs)
    {
        if (!(us >= 0 && us <= 1e5))
        {
            return "--nic-packet-us: each time must be 0..100000 us";
        }
    }
    if (o.Infrastructure() && !star && o.taps.size() != 2)
    {
        return "--mode ap on a line takes exactly 2 --taps (the stations); more with --layout star";
    }
    return "";
}

} // namespace netloop::wifi
