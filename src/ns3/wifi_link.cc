// netloop_wifi_link: a real-time ns-3 IEEE 802.11a/g/n channel joining Linux tap devices.
//
// Each ns-3 node owns one Wi-Fi device (`--standard` 80211a, 80211g or 80211n at 2.4 GHz;
// `--manager` constant: ConstantRateWifiManager at the fixed `--rate`, or ideal:
// IdealWifiManager; YANS channel) bridged to a Linux tap device by a TapBridge in
// ConfigureLocal mode. `--mode` adhoc: the nodes are ad-hoc stations that talk directly.
// `--mode` ap (infrastructure): one more node, the access point, has no tap; the tapped
// nodes are stations associated to it (SSID "netloop"), so every frame from one station to
// another goes up to the AP and is forwarded down by its MAC (ApWifiMac): it crosses the air
// twice. The "ready" line is written only once every station is associated. The Python testbed (netloop.testbed.links) runs this program inside
// a private "link" network namespace, waits for the "ready" line, then moves each tap into
// its host namespace. Nodes sit on a line, `--distance` metres apart; `--range` (metres,
// 0 = unlimited) cuts the channel off beyond that distance, so with 3 nodes and
// distance < range < 2*distance the two ends are hidden terminals that only hear the middle.
// In ap mode the access point sits in the middle: the two stations at 0 and 2*distance.
// `--layout star` (many robots): the last tap (the operator) — or in ap mode the access point
// — at the origin and the other stations on a circle of radius --distance around it (up to
// 17 taps), all in range of the hub.
//
// The simulator runs in real time (RealtimeSimulatorImpl, best effort, ChecksumEnabled).
// A probe event every `--probe-ms` measures how late the simulator runs behind the wall
// clock; every `--stats-interval` seconds one JSON line is appended to `--stats`:
//   {"type":"stats","wall":<epoch s>,"sim_s":..,"lag_max_ms":<interval max>,"lag_mean_ms":..,
//    "lag_max_total_ms":..,"lag_mean_total_ms":..,"probes":..,"late_probes":..,"cpu_s":..,
//    "stalls":[[<epoch s it began>,<max lag ms>,<late probes>],..] (stalls over since the last
//    line: runs of consecutive probes later than --lag-bound), "minor_faults":..,
//    "major_faults":..,"involuntary_switches":.. (getrusage, the whole process),
//    "nodes":[{"mac_tx":..,"mac_rx":..,"queue_drop":..,"retries":..,"final_fail":..,
//              "phy_tx_drop":..,"phy_rx_drop":..,"data_mpdu_tx":..},...]}
// "nodes" follows --taps, then the access point (ap mode). data_mpdu_tx counts the data
// frames (MPDUs, retransmissions included) each node put on the air: in ap mode the AP's
// count is the stations' relayed traffic.
// `--background-pairs` N (ad-hoc only) adds 2N stations without taps on the same channel,
// placed beside the line: station 2k sends `--background-bytes` frames to station 2k+1 as a
// Poisson stream of `--background-mbit` Mbit/s (unicast: ACKed and retried like any data
// frame), the traffic and interference of other stations sharing the channel. Their frames
// are counted in the stats line as "background":{"offered":..,"sent":..,"queue_drop":..}.
// Lag samples taken before `--warmup` seconds of simulated time are not counted (tap
// creation forks a helper at t=0). SIGTERM/SIGINT stop the simulation cleanly and write a
// last line with "type":"final".
// Loss bursts (netloop's faults with `loss`) are set while it runs: every 10 ms of simulated
// time the program reads its standard input; a line `loss <k> <p>` makes every data frame
// that node k (0-based, in --taps order) transmits lost on the air with probability at least
// p, `loss all <p>` every data frame; p = 0 ends the burst. As with --frame-error-rate, a lost
// frame costs a MAC retry: packets are lost only when the retries run out. Frames lost so are
// counted per receiving node as "burst_drops"; each applied line is echoed as a "control" line.
//
// Two ns-3 3.37 packaging problems are handled here:
//  * the TapBridge library execs its tap-creator helper at a path fixed when Debian built
//    it, which does not exist. This program defines execlp(), which takes precedence over
//    libc's for the library's call, and redirects a missing "*tap-creator" to
//    $NETLOOP_TAP_CREATOR or NETLOOP_TAP_CREATOR_DEFAULT.
//  * in UseLocal mode the device's MAC changes but its FrameExchangeManager keeps the old
//    one (no 802.11 ACKs). ConfigureLocal mode gives the tap the device's MAC instead, so
//    the MAC never changes.

#include "ns3/core-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/realtime-simulator-impl.h"
#include "ns3/tap-bridge-module.h"
#include "ns3/wifi-module.h"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <net/if.h>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>
#include <vector>

#ifndef NETLOOP_TAP_CREATOR_DEFAULT
#define NETLOOP_TAP_CREATOR_DEFAULT "/usr/libexec/ns3/ns3.37-tap-creator"
#endif

// Runs in the forked child of TapBridge::CreateTap: no allocation, only async-signal-safe calls.
extern "C" int
execlp(const char* file, const char* arg, ...)
{
    enum
    {
        kMaxArgs = 64
    };

    char* argv[kMaxArgs + 1];
    int argc = 0;
    argv[argc++] = const_cast<char*>(arg);
    va_list ap;
    va_start(ap, arg);
    char* next;
    while ((next = va_arg(ap, char*)) != nullptr && argc < kMaxArgs)
    {
        argv[argc++] = next;
    }
    va_end(ap);
    argv[argc] = nullptr;

    const char* path = file;
    const char* suffix = "tap-creator";
    size_t n = strlen(file);
    size_t m = strlen(suffix);
    if (n >= m && strcmp(file + n - m, suffix) == 0 && access(file, X_OK) != 0)
    {
        const char* env = getenv("NETLOOP_TAP_CREATOR");
        path = (env && *env) ? env : NETLOOP_TAP_CREATOR_DEFAULT;
    }
    return execvp(path, argv);
}

using namespace ns3;

namespace
{

volatile std::sig_atomic_t g_stop = 0;

void
OnSignal(int)
{
    g_stop = 1;
}

struct NodeCounters
{
    uint64_t macTx = 0;
    uint64_t macRx = 0;
    uint64_t queueDrop = 0;
    uint64_t retries = 0;
    uint64_t finalFail = 0;
    uint64_t phyTxDrop = 0;
    uint64_t phyRxDrop = 0;
    uint64_t dataMpduTx = 0;
    uint64_t corrupted = 0;         // data frames dropped by the configured frame error rate
    uint64_t burstCorrupted = 0;    // data frames dropped by a loss burst (control input)
    // MAC (device) queue: length sampled at every lag probe, and seen by arriving packets
    uint64_t qSamples = 0;          // interval
    uint64_t qSum = 0;              // interval
    uint32_t qMax = 0;              // interval
    uint32_t qMaxTotal = 0;
    uint64_t arrivals = 0;          // total
    uint64_t aheadSum = 0;          // total: frames already queued when a packet arrived
    uint64_t smallArrivals = 0;     // total, packets of at most g_smallBytes
    uint64_t smallAheadSum = 0;
    uint32_t smallAheadMax = 0;
};

struct LagStats
{
    double intervalMax = 0;
    double intervalSum = 0;
    uint64_t intervalCount = 0;
    double totalMax = 0;
    double totalSum = 0;
    uint64_t totalCount = 0;
    uint64_t late = 0;
};

/// A stall: consecutive probes later than the bound. Reported once it is over (or at the end),
/// so a run can tell when the emulator fell behind, for how long and how far.
struct Stall
{
    double startWall = 0; // epoch s when the simulator fell behind (first late probe - its lag)
    double maxMs = 0;
    uint64_t probes = 0;
};

std::vector<NodeCounters> g_nodes;
LagStats g_lag;
bool g_inStall = false;
Stall g_stall;                   // the one under way, when g_inStall
std::vector<Stall> g_stallsDone; // ended since the last stats line
// loss bursts: probability per transmitting node (by its MAC address), and for every frame
std::map<Mac48Address, uint32_t> g_nodeOfMac;
std::vector<double> g_burstLoss;
double g_burstLossAll = 0.0;
FILE* g_stats = nullptr;
RealtimeSimulatorImpl* g_rt = nullptr;
Time g_probe;
Time g_statsInterval;
Time g_warmup;
double g_lagBoundMs = 5.0;
std::vector<std::string> g_taps;
std::vector<Ptr<WifiMacQueue>> g_queues; // one per device (the non-QoS DCF queue)
uint32_t g_smallBytes = 1200;            // "small" packets (e.g. a 1 KB laser message)

/// Drops received data frames (MPDUs); control frames (ACK, RTS, CTS) and management
/// frames pass. Installed as the PHY's post-reception error model, so each lost data frame
/// costs one MAC retry (up to the retry limit). burst = 1: each frame is lost independently
/// with probability `rate`; burst > 1: a two-state (Gilbert-Elliott) channel whose bad state
/// loses every frame and lasts `burst` frames on average, entered so that the long-run
/// fraction of lost frames is still `rate`.
class DataFrameErrorModel : public ErrorModel
{
  public:
    DataFrameErrorModel(double rate, double burst, uint32_t node)
        : m_rate(rate),
          m_node(node),
          m_rv(CreateObject<UniformRandomVariable>())
    {
        if (burst > 1)
        {
            m_leaveBad = 1.0 / burst;
            m_enterBad = rate / (1.0 - rate) * m_leaveBad;
        }
    }

  private:
    bool DoCorrupt(Ptr<Packet> p) override;
    void DoReset() override
    {
    }

    double m_rate;
    uint32_t m_node;
    Ptr<UniformRandomVariable> m_rv;
    double m_enterBad = -1; // < 0: independent losses
    double m_leaveBad = 0;
    bool m_bad = false;
};

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
        g_nodes[m_node].corrupted++;
        return true;
    }
    double burst = g_burstLossAll;
    auto sender = g_nodeOfMac.find(hdr.GetAddr2());
    if (sender != g_nodeOfMac.end())
    {
        burst = std::max(burst, g_burstLoss[sender->second]);
    }
    if (burst > 0 && m_rv->GetValue() < burst)
    {
        g_nodes[m_node].burstCorrupted++;
        return true;
    }
    return false;
}

void
CountEnqueue(uint32_t i, Ptr<const WifiMpdu> mpdu)
{
    NodeCounters& c = g_nodes[i];
    uint32_t ahead = g_queues[i]->GetNPackets();
    ahead = ahead ? ahead - 1 : 0;
    c.arrivals++;
    c.aheadSum += ahead;
    if (mpdu->GetPacketSize() <= g_smallBytes)
    {
        c.smallArrivals++;
        c.smallAheadSum += ahead;
        c.smallAheadMax = std::max(c.smallAheadMax, ahead);
    }
}

void
SampleQueues()
{
    for (size_t i = 0; i < g_queues.size(); ++i)
    {
        uint32_t n = g_queues[i]->GetNPackets();
        NodeCounters& c = g_nodes[i];
        c.qSamples++;
        c.qSum += n;
        c.qMax = std::max(c.qMax, n);
        c.qMaxTotal = std::max(c.qMaxTotal, n);
    }
}

void
CountMacTx(uint32_t i, Ptr<const Packet>)
{
    g_nodes[i].macTx++;
}

void
CountMacRx(uint32_t i, Ptr<const Packet>)
{
    g_nodes[i].macRx++;
}

void
CountQueueDrop(uint32_t i, Ptr<const Packet>)
{
    g_nodes[i].queueDrop++;
}

void
CountRetry(uint32_t i, Mac48Address)
{
    g_nodes[i].retries++;
}

void
CountFinalFail(uint32_t i, Mac48Address)
{
    g_nodes[i].finalFail++;
}

void
CountPhyTxDrop(uint32_t i, Ptr<const Packet>)
{
    g_nodes[i].phyTxDrop++;
}

void
CountPhyRxDrop(uint32_t i, Ptr<const Packet>, WifiPhyRxfailureReason)
{
    g_nodes[i].phyRxDrop++;
}

void
CountDataMpdus(uint32_t i, WifiConstPsduMap psdus, WifiTxVector, double)
{
    for (const auto& entry : psdus)
    {
        for (const auto& mpdu : *entry.second)
        {
            if (mpdu->GetHeader().IsData())
            {
                g_nodes[i].dataMpduTx++;
            }
        }
    }
}

double
WallNow()
{
    struct timeval tv;
    gettimeofday(&tv, nullptr);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

double
CpuSeconds()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

/// Other stations on the channel: a Poisson stream of unicast frames from one background
/// station to its partner (see the file header).
struct BackgroundPair
{
    Ptr<NetDevice> from;
    Address to;
    uint32_t bytes = 1000;
    Ptr<ExponentialRandomVariable> gap; // seconds between frames
};

std::vector<BackgroundPair> g_background;
uint64_t g_backgroundOffered = 0;
uint64_t g_backgroundSent = 0; // accepted by the sender's MAC queue
uint64_t g_backgroundDropped = 0;

/// EtherType of the background frames (IEEE 802 local experimental): the receiving node has
/// no handler for it, so the frames are ACKed by the MAC and then discarded.
const uint16_t kBackgroundEtherType = 0x88B5;

void
SendBackground(size_t k)
{
    BackgroundPair& b = g_background[k];
    ++g_backgroundOffered;
    if (b.from->Send(Create<Packet>(b.bytes), b.to, kBackgroundEtherType))
    {
        ++g_backgroundSent;
    }
    else
    {
        ++g_backgroundDropped;
    }
    Simulator::Schedule(Seconds(b.gap->GetValue()), &SendBackground, k);
}

void
WriteLine(const char* type)
{
    if (!g_stats)
    {
        return;
    }
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(6);
    double imean = g_lag.intervalCount ? g_lag.intervalSum / g_lag.intervalCount : 0.0;
    double tmean = g_lag.totalCount ? g_lag.totalSum / g_lag.totalCount : 0.0;
    os << "{\"type\":\"" << type << "\",\"wall\":" << WallNow()
       << ",\"sim_s\":" << Simulator::Now().GetSeconds() << ",\"lag_max_ms\":" << g_lag.intervalMax
       << ",\"lag_mean_ms\":" << imean << ",\"lag_max_total_ms\":" << g_lag.totalMax
       << ",\"lag_mean_total_ms\":" << tmean << ",\"probes\":" << g_lag.totalCount
       << ",\"late_probes\":" << g_lag.late << ",\"lag_bound_ms\":" << g_lagBoundMs
       << ",\"cpu_s\":" << CpuSeconds();
    if (std::string(type) == "final" && g_inStall)
    {
        g_stallsDone.push_back(g_stall);
        g_inStall = false;
    }
    os << ",\"stalls\":[";
    for (size_t i = 0; i < g_stallsDone.size(); ++i)
    {
        const Stall& st = g_stallsDone[i];
        os << (i ? "," : "") << "[" << st.startWall << "," << st.maxMs << "," << st.probes << "]";
    }
    g_stallsDone.clear();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    os << "],\"minor_faults\":" << ru.ru_minflt << ",\"major_faults\":" << ru.ru_majflt
       << ",\"involuntary_switches\":" << ru.ru_nivcsw << ",\"nodes\":[";
    for (size_t i = 0; i < g_nodes.size(); ++i)
    {
        const NodeCounters& c = g_nodes[i];
        os << (i ? "," : "") << "{\"mac_tx\":" << c.macTx << ",\"mac_rx\":" << c.macRx
           << ",\"queue_drop\":" << c.queueDrop << ",\"retries\":" << c.retries
           << ",\"final_fail\":" << c.finalFail << ",\"phy_tx_drop\":" << c.phyTxDrop
           << ",\"phy_rx_drop\":" << c.phyRxDrop << ",\"data_mpdu_tx\":" << c.dataMpduTx
           << ",\"fer_drops\":" << c.corrupted << ",\"burst_drops\":" << c.burstCorrupted
           << ",\"mac_queue_mean\":"
           << (c.qSamples ? double(c.qSum) / c.qSamples : 0.0) << ",\"mac_queue_max\":" << c.qMax
           << ",\"mac_queue_max_total\":" << c.qMaxTotal << ",\"mac_queue_arrivals\":" << c.arrivals
           << ",\"mac_queue_ahead_mean\":" << (c.arrivals ? double(c.aheadSum) / c.arrivals : 0.0)
           << ",\"small_arrivals\":" << c.smallArrivals << ",\"small_ahead_mean\":"
           << (c.smallArrivals ? double(c.smallAheadSum) / c.smallArrivals : 0.0)
           << ",\"small_ahead_max\":" << c.smallAheadMax << "}";
    }
    os << "]";
    if (!g_background.empty())
    {
        os << ",\"background\":{\"pairs\":" << g_background.size() << ",\"offered\":"
           << g_backgroundOffered << ",\"sent\":" << g_backgroundSent << ",\"queue_drop\":"
           << g_backgroundDropped << "}";
    }
    os << "}\n";
    std::string line = os.str();
    fputs(line.c_str(), g_stats);
    fflush(g_stats);
    for (NodeCounters& c : g_nodes)
    {
        c.qSamples = 0;
        c.qSum = 0;
        c.qMax = 0;
    }
    g_lag.intervalMax = 0;
    g_lag.intervalSum = 0;
    g_lag.intervalCount = 0;
}

/// Apply one control line (`loss <k>|all <p>`); returns an error text, empty when applied.
std::string
ApplyControl(const std::string& line)
{
    std::istringstream in(line);
    std::string verb, target;
    double p = -1;
    if (!(in >> verb >> target >> p) || verb != "loss" || p < 0 || p > 1)
    {
        return "bad control line (expected: loss <node index>|all <probability 0..1>)";
    }
    if (target == "all")
    {
        g_burstLossAll = p;
        return "";
    }
    char* end = nullptr;
    unsigned long k = std::strtoul(target.c_str(), &end, 10);
    if (*end != '\0' || k >= g_burstLoss.size())
    {
        return "no node " + target;
    }
    g_burstLoss[k] = p;
    return "";
}

/// Every 10 ms: the lines that arrived on standard input (the control input); stops at EOF.
void
ReadControl()
{
    static std::string pending;
    char buf[4096];
    ssize_t got;
    while ((got = read(STDIN_FILENO, buf, sizeof buf)) > 0)
    {
        pending.append(buf, got);
    }
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos)
    {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        std::string error = ApplyControl(line);
        for (char& ch : line)
        {
            ch = (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ? '?' : ch;
        }
        if (g_stats)
        {
            std::fprintf(g_stats, "{\"type\":\"control\",\"wall\":%.6f,\"line\":\"%s\",\"error\":%s%s%s}\n",
                         WallNow(), line.c_str(), error.empty() ? "null" : "\"", error.c_str(),
                         error.empty() ? "" : "\"");
            std::fflush(g_stats);
        }
    }
    if (got == 0)
    {
        return; // the controller closed it: nothing more will come
    }
    Simulator::Schedule(MilliSeconds(10), &ReadControl);
}

void
LagProbe()
{
    if (g_stop)
    {
        Simulator::Stop();
        return;
    }
    if (Simulator::Now() >= g_warmup)
    {
        double lagMs = (g_rt->RealtimeNow() - Simulator::Now()).GetSeconds() * 1e3;
        if (lagMs < 0)
        {
            lagMs = 0;
        }
        g_lag.intervalMax = std::max(g_lag.intervalMax, lagMs);
        g_lag.intervalSum += lagMs;
        g_lag.intervalCount++;
        g_lag.totalMax = std::max(g_lag.totalMax, lagMs);
        g_lag.totalSum += lagMs;
        g_lag.totalCount++;
        if (lagMs > g_lagBoundMs)
        {
            g_lag.late++;
            if (!g_inStall)
            {
                g_inStall = true;
                g_stall = Stall{WallNow() - lagMs / 1e3, 0.0, 0};
            }
            g_stall.maxMs = std::max(g_stall.maxMs, lagMs);
            g_stall.probes++;
        }
        else if (g_inStall)
        {
            g_stallsDone.push_back(g_stall);
            g_inStall = false;
        }
        SampleQueues();
    }
    Simulator::Schedule(g_probe, &LagProbe);
}

void
PeriodicStats()
{
    WriteLine("stats");
    Simulator::Schedule(g_statsInterval, &PeriodicStats);
}

/// Whether every station of an infrastructure network is associated (true in ad-hoc mode).
bool
StationsAssociated(const NetDeviceContainer& devices)
{
    for (uint32_t i = 0; i < g_taps.size(); ++i)
    {
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(devices.Get(i));
        Ptr<StaWifiMac> sta = DynamicCast<StaWifiMac>(dev->GetMac());
        if (sta && !sta->IsAssociated())
        {
            return false;
        }
    }
    return true;
}

void
CheckReady(NetDeviceContainer devices)
{
    for (const std::string& tap : g_taps)
    {
        if (if_nametoindex(tap.c_str()) == 0)
        {
            Simulator::Schedule(MilliSeconds(1), &CheckReady, devices);
            return;
        }
    }
    if (!StationsAssociated(devices))
    {
        Simulator::Schedule(MilliSeconds(1), &CheckReady, devices);
        return;
    }
    if (g_stats)
    {
        std::ostringstream os;
        os << "{\"type\":\"ready\",\"wall\":" << std::fixed << WallNow() << ",\"pid\":" << getpid()
           << ",\"sim_s\":" << Simulator::Now().GetSeconds() << ",\"macs\":[";
        for (uint32_t i = 0; i < devices.GetN(); ++i)
        {
            os << (i ? "," : "") << "\"" << Mac48Address::ConvertFrom(devices.Get(i)->GetAddress())
               << "\"";
        }
        os << "]}\n";
        fputs(os.str().c_str(), g_stats);
        fflush(g_stats);
    }
}

std::vector<std::string>
Split(const std::string& s)
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

/// The ns-3 standard, the non-HT rate of control frames and the channel of `name`.
struct StandardChoice
{
    WifiStandard standard;
    const char* controlMode;
    const char* channelSettings; // "" = the standard's default channel
};

bool
ParseStandard(const std::string& name, StandardChoice& out)
{
    if (name == "80211a")
    {
        out = {WIFI_STANDARD_80211a, "OfdmRate6Mbps", ""};
    }
    else if (name == "80211g")
    {
        out = {WIFI_STANDARD_80211g, "ErpOfdmRate6Mbps", ""};
    }
    else if (name == "80211n")
    {
        out = {WIFI_STANDARD_80211n, "ErpOfdmRate6Mbps", "{1, 20, BAND_2_4GHZ, 0}"};
    }
    else
    {
        return false;
    }
    return true;
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string taps;
    std::string ips;
    std::string netmask = "255.255.255.0";
    std::string rate = "OfdmRate6Mbps";
    std::string statsPath;
    double distance = 10.0;
    std::string layout = "line";
    double range = 0.0;
    double txPower = 16.0206;
    double statsInterval = 1.0;
    double probeMs = 1.0;
    double warmup = 0.5;
    double duration = 0.0;
    uint32_t rtsThreshold = 65535;
    uint32_t queuePackets = 500;
    uint32_t seed = 1;
    std::string standardName = "80211a";
    std::string mode = "adhoc";
    std::string manager = "constant";
    double frameErrorRate = 0.0;
    double errorBurst = 1.0;
    uint32_t retryLimit = 7;
    uint32_t backgroundPairs = 0;
    double backgroundMbit = 0.0;
    uint32_t backgroundBytes = 1000;

    CommandLine cmd(__FILE__);
    cmd.Usage("Real-time 802.11a/g/n channel between Linux tap devices (see the file header).");
    cmd.AddValue("taps", "comma-separated tap device names, one per node (2 or 3)", taps);
    cmd.AddValue("ips", "comma-separated IPv4 addresses given to the taps", ips);
    cmd.AddValue("netmask", "IPv4 netmask of the taps", netmask);
    cmd.AddValue("standard", "80211a, 80211g or 80211n (2.4 GHz, 20 MHz)", standardName);
    cmd.AddValue("mode", "adhoc (stations talk directly) or ap (stations of an access point)", mode);
    cmd.AddValue("manager", "constant (fixed --rate), ideal (IdealWifiManager) or minstrel "
                 "(MinstrelWifiManager; MinstrelHtWifiManager for 80211n)", manager);
    cmd.AddValue("frame-error-rate", "probability that a received data frame is lost (0..1); "
                 "control frames are not", frameErrorRate);
    cmd.AddValue("error-burst", "mean length in frames of a run of lost data frames (1 = "
                 "independent losses)", errorBurst);
    cmd.AddValue("retry-limit", "802.11 retry limit (MaxSsrc and MaxSlrc)", retryLimit);
    cmd.AddValue("background-pairs", "pairs of other stations on the channel (ad-hoc only), "
                 "each sending a Poisson stream of unicast frames to its partner", backgroundPairs);
    cmd.AddValue("background-mbit", "offered rate of each background pair, Mbit/s of frame "
                 "payload", backgroundMbit);
    cmd.AddValue("background-bytes", "payload bytes of a background frame", backgroundBytes);
    cmd.AddValue("small-bytes", "packets up to this size count as small in the queue stats",
                 g_smallBytes);
    cmd.AddValue("rate", "fixed data mode of --manager constant (e.g. OfdmRate6Mbps, "
                 "ErpOfdmRate54Mbps, HtMcs7)", rate);
    cmd.AddValue("distance", "metres between neighbouring nodes on the line", distance);
    cmd.AddValue("layout", "line (nodes on a line) or star (around the last tap, or the access point)",
                 layout);
    cmd.AddValue("range", "propagation cut-off in metres (0 = unlimited)", range);
    cmd.AddValue("tx-power", "transmit power, dBm", txPower);
    cmd.AddValue("rts-threshold", "RTS/CTS threshold in bytes (65535 = off)", rtsThreshold);
    cmd.AddValue("queue", "Wi-Fi MAC queue size, packets", queuePackets);
    cmd.AddValue("seed", "ns-3 random seed", seed);
    cmd.AddValue("stats", "file to append JSON lines (ready, stats, final) to", statsPath);
    cmd.AddValue("stats-interval", "seconds between stats lines", statsInterval);
    cmd.AddValue("probe-ms", "milliseconds between real-time lag probes", probeMs);
    cmd.AddValue("lag-bound", "lag in ms above which a probe counts as late", g_lagBoundMs);
    cmd.AddValue("warmup", "simulated seconds before lag is counted", warmup);
    cmd.AddValue("duration", "stop after this many seconds (0 = until SIGTERM)", duration);
    cmd.Parse(argc, argv);

    g_taps = Split(taps);
    std::vector<std::string> addrs = Split(ips);
    if (layout != "line" && layout != "star")
    {
        std::fprintf(stderr, "netloop_wifi_link: --layout %s: allowed line, star\n", layout.c_str());
        return 2;
    }
    const bool star = layout == "star";
    if (g_taps.size() < 2 || g_taps.size() > (star ? 17u : 3u) || addrs.size() != g_taps.size())
    {
        std::fprintf(stderr, "netloop_wifi_link: need 2 or 3 --taps (up to 17 with --layout star) and as "
                     "many --ips\n");
        return 2;
    }
    if (distance <= 0 || range < 0 || statsInterval <= 0 || probeMs <= 0)
    {
        std::fprintf(stderr, "netloop_wifi_link: distance, stats-interval and probe-ms must be > 0\n");
        return 2;
    }
    StandardChoice choice;
    if (!ParseStandard(standardName, choice))
    {
        std::fprintf(stderr, "netloop_wifi_link: --standard %s: allowed 80211a, 80211g, 80211n\n",
                     standardName.c_str());
        return 2;
    }
    if (mode != "adhoc" && mode != "ap")
    {
        std::fprintf(stderr, "netloop_wifi_link: --mode %s: allowed adhoc, ap\n", mode.c_str());
        return 2;
    }
    if (manager != "constant" && manager != "ideal" && manager != "minstrel")
    {
        std::fprintf(stderr, "netloop_wifi_link: --manager %s: allowed constant, ideal, minstrel\n",
                     manager.c_str());
        return 2;
    }
    if (frameErrorRate < 0 || frameErrorRate >= 1 || retryLimit < 1 || retryLimit > 255 ||
        errorBurst < 1)
    {
        std::fprintf(stderr, "netloop_wifi_link: need 0 <= --frame-error-rate < 1, "
                     "--error-burst >= 1 and 1 <= --retry-limit <= 255\n");
        return 2;
    }
    if (backgroundPairs > 16 || backgroundMbit < 0 || backgroundBytes < 1 ||
        backgroundBytes > 2304 || (backgroundPairs > 0 && backgroundMbit <= 0))
    {
        std::fprintf(stderr, "netloop_wifi_link: need --background-pairs <= 16, --background-mbit > 0 "
                     "with pairs, 1 <= --background-bytes <= 2304\n");
        return 2;
    }
    const bool infrastructure = mode == "ap";
    if (infrastructure && backgroundPairs > 0)
    {
        std::fprintf(stderr, "netloop_wifi_link: --background-pairs needs --mode adhoc\n");
        return 2;
    }
    if (infrastructure && !star && g_taps.size() != 2)
    {
        std::fprintf(stderr, "netloop_wifi_link: --mode ap on a line takes exactly 2 --taps (the stations); "
                     "more with --layout star\n");
        return 2;
    }
    if (!statsPath.empty())
    {
        g_stats = std::fopen(statsPath.c_str(), "a");
        if (!g_stats)
        {
            std::fprintf(stderr, "netloop_wifi_link: cannot open %s: %s\n", statsPath.c_str(),
                         std::strerror(errno));
            return 2;
        }
    }

    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);

    GlobalValue::Bind("SimulatorImplementationType", StringValue("ns3::RealtimeSimulatorImpl"));
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    RngSeedManager::SetSeed(seed);
    Config::SetDefault("ns3::WifiMacQueue::MaxSize",
                       QueueSizeValue(QueueSize(std::to_string(queuePackets) + "p")));
    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold",
                       UintegerValue(rtsThreshold));
    Config::SetDefault("ns3::WifiRemoteStationManager::MaxSsrc", UintegerValue(retryLimit));
    Config::SetDefault("ns3::WifiRemoteStationManager::MaxSlrc", UintegerValue(retryLimit));

    uint32_t n = g_taps.size();
    g_nodes.resize(n + (infrastructure ? 1 : 0));
    NodeContainer nodes; // the tapped nodes (stations), then the access point
    nodes.Create(n);
    NodeContainer apNode;
    if (infrastructure)
    {
        apNode.Create(1);
    }

    WifiHelper wifi;
    wifi.SetStandard(choice.standard);
    if (manager == "constant")
    {
        wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                     "DataMode",
                                     StringValue(rate),
                                     "ControlMode",
                                     StringValue(choice.controlMode));
    }
    else if (manager == "ideal")
    {
        wifi.SetRemoteStationManager("ns3::IdealWifiManager");
    }
    else
    {
        wifi.SetRemoteStationManager(choice.standard == WIFI_STANDARD_80211n
                                         ? "ns3::MinstrelHtWifiManager"
                                         : "ns3::MinstrelWifiManager");
    }

    YansWifiChannelHelper channel;
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    if (range > 0)
    {
        channel.AddPropagationLoss("ns3::RangePropagationLossModel", "MaxRange", DoubleValue(range));
    }
    channel.AddPropagationLoss("ns3::LogDistancePropagationLossModel");

    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    phy.Set("TxPowerStart", DoubleValue(txPower));
    phy.Set("TxPowerEnd", DoubleValue(txPower));
    if (*choice.channelSettings)
    {
        phy.Set("ChannelSettings", StringValue(choice.channelSettings));
    }

    WifiMacHelper mac;
    NetDeviceContainer devices;
    NetDeviceContainer all; // devices, then the access point's
    Ssid ssid("netloop");
    if (infrastructure)
    {
        mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "ActiveProbing", BooleanValue(false));
        devices = wifi.Install(phy, mac, nodes);
        mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid));
        all.Add(devices);
        all.Add(wifi.Install(phy, mac, apNode));
    }
    else
    {
        mac.SetType("ns3::AdhocWifiMac");
        devices = wifi.Install(phy, mac, nodes);
        all.Add(devices);
    }

    MobilityHelper mobility;
    Ptr<ListPositionAllocator> positions = CreateObject<ListPositionAllocator>();
    if (star) // the hub (the access point, or the last tap: the operator) at the origin, the
    {         // other stations evenly on a circle of radius `distance` around it
        const uint32_t around = infrastructure ? n : n - 1;
        for (uint32_t i = 0; i < around; ++i)
        {
            const double a = 2.0 * M_PI * i / around;
            positions->Add(Vector(distance * std::cos(a), distance * std::sin(a), 0.0));
        }
        positions->Add(Vector(0.0, 0.0, 0.0)); // the operator (ad-hoc) or the access point
    }
    else
    {
        for (uint32_t i = 0; i < n; ++i) // ap mode: stations at 0 and 2 d, the AP at d
        {
            positions->Add(Vector(i * distance * (infrastructure ? 2 : 1), 0.0, 0.0));
        }
        if (infrastructure)
        {
            positions->Add(Vector(distance, 0.0, 0.0));
        }
    }
    mobility.SetPositionAllocator(positions);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(nodes);
    mobility.Install(apNode);

    // Background stations: pair k at y = (k + 1) * distance beside the line, its two
    // stations at x = 0 and x = distance (in range of, and contending with, the tapped nodes).
    NodeContainer backgroundNodes;
    if (backgroundPairs > 0)
    {
        backgroundNodes.Create(2 * backgroundPairs);
        NetDeviceContainer bgDevices = wifi.Install(phy, mac, backgroundNodes);
        Ptr<ListPositionAllocator> bgPositions = CreateObject<ListPositionAllocator>();
        for (uint32_t k = 0; k < backgroundPairs; ++k)
        {
            bgPositions->Add(Vector(0.0, (k + 1) * distance, 0.0));
            bgPositions->Add(Vector(distance, (k + 1) * distance, 0.0));
        }
        MobilityHelper bgMobility;
        bgMobility.SetPositionAllocator(bgPositions);
        bgMobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
        bgMobility.Install(backgroundNodes);
        const double meanGap = backgroundBytes * 8.0 / (backgroundMbit * 1e6);
        for (uint32_t k = 0; k < backgroundPairs; ++k)
        {
            BackgroundPair b;
            b.from = bgDevices.Get(2 * k);
            b.to = bgDevices.Get(2 * k + 1)->GetAddress();
            b.bytes = backgroundBytes;
            b.gap = CreateObject<ExponentialRandomVariable>();
            b.gap->SetAttribute("Mean", DoubleValue(meanGap));
            g_background.push_back(b);
        }
        for (size_t k = 0; k < g_background.size(); ++k)
        {
            Simulator::Schedule(Seconds(warmup + g_background[k].gap->GetValue()), &SendBackground, k);
        }
    }

    for (uint32_t i = 0; i < all.GetN(); ++i)
    {
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(all.Get(i));
        dev->GetMac()->TraceConnectWithoutContext("MacTx", MakeBoundCallback(&CountMacTx, i));
        dev->GetMac()->TraceConnectWithoutContext("MacRx", MakeBoundCallback(&CountMacRx, i));
        dev->GetMac()->TraceConnectWithoutContext("MacTxDrop",
                                                  MakeBoundCallback(&CountQueueDrop, i));
        dev->GetRemoteStationManager()->TraceConnectWithoutContext(
            "MacTxDataFailed",
            MakeBoundCallback(&CountRetry, i));
        dev->GetRemoteStationManager()->TraceConnectWithoutContext(
            "MacTxFinalDataFailed",
            MakeBoundCallback(&CountFinalFail, i));
        dev->GetPhy()->TraceConnectWithoutContext("PhyTxDrop",
                                                  MakeBoundCallback(&CountPhyTxDrop, i));
        dev->GetPhy()->TraceConnectWithoutContext("PhyRxDrop",
                                                  MakeBoundCallback(&CountPhyRxDrop, i));
        dev->GetPhy()->TraceConnectWithoutContext("PhyTxPsduBegin",
                                                  MakeBoundCallback(&CountDataMpdus, i));
        Ptr<WifiMacQueue> queue = dev->GetMac()->GetTxop()
                                      ? dev->GetMac()->GetTxop()->GetWifiMacQueue()
                                      : dev->GetMac()->GetTxopQueue(AC_BE);
        g_queues.push_back(queue);
        queue->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&CountEnqueue, i));
        // always installed: the configured frame error rate and the loss bursts
        dev->GetPhy()->SetPostReceptionErrorModel(
            CreateObject<DataFrameErrorModel>(frameErrorRate, errorBurst, i));
        g_nodeOfMac[Mac48Address::ConvertFrom(dev->GetAddress())] = i;
    }
    g_burstLoss.assign(all.GetN(), 0.0);

    TapBridgeHelper bridge;
    bridge.SetAttribute("Mode", StringValue("ConfigureLocal"));
    for (uint32_t i = 0; i < n; ++i)
    {
        bridge.SetAttribute("DeviceName", StringValue(g_taps[i]));
        bridge.SetAttribute("IpAddress", Ipv4AddressValue(addrs[i].c_str()));
        bridge.SetAttribute("Netmask", Ipv4MaskValue(netmask.c_str()));
        bridge.Install(nodes.Get(i), devices.Get(i));
    }

    g_rt = dynamic_cast<RealtimeSimulatorImpl*>(PeekPointer(Simulator::GetImplementation()));
    if (!g_rt)
    {
        std::fprintf(stderr, "netloop_wifi_link: real-time simulator not active\n");
        return 1;
    }
    g_probe = MicroSeconds(static_cast<int64_t>(probeMs * 1000));
    g_statsInterval = MicroSeconds(static_cast<int64_t>(statsInterval * 1e6));
    g_warmup = MicroSeconds(static_cast<int64_t>(warmup * 1e6));

    Simulator::Schedule(MilliSeconds(1), &CheckReady, devices);
    Simulator::Schedule(g_probe, &LagProbe);
    Simulator::Schedule(g_statsInterval, &PeriodicStats);
    // the control input: netloop's pipe (a terminal's is left alone: O_NONBLOCK would outlive us)
    if (!isatty(STDIN_FILENO) &&
        fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK) == 0)
    {
        Simulator::Schedule(MilliSeconds(10), &ReadControl);
    }
    if (duration > 0)
    {
        Simulator::Stop(Seconds(duration));
    }
    Simulator::Run();
    WriteLine("final");
    Simulator::Destroy();
    if (g_stats)
    {
        std::fclose(g_stats);
    }
    return 0;
}
