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
//              "phy_tx_drop":..,"phy_rx_drop":..,"data_mpdu_tx":..,"data_ppdu_tx":..,
//              "mac_queue_drop":..},...]}
// queue_drop counts what the MAC refused before queueing (ns-3's MacTxDrop); mac_queue_drop the
// frames the MAC took (mac_tx) that a full MAC (device) queue refused (--queue, tail drop: ns-3
// refuses them without a trace, so they are mac_tx less the frames that entered the queue).
// With --qos each node also has "ac_enqueued":{"BE":..,"BK":..,"VI":..,"VO":..}: the frames that
// entered each access category's MAC queue (qos_classifier.h: 802.11e, EDCA, every station's
// MAC with QoS, each frame's access category from its DSCP as Linux's mac80211 chooses it).
// "nodes" follows --taps, then the access point (ap mode). data_mpdu_tx counts the data
// frames (MPDUs, retransmissions included) each node put on the air: in ap mode the AP's
// count is the stations' relayed traffic; data_ppdu_tx counts the transmissions that carried
// them (802.11n aggregates several MPDUs into one A-MPDU). With --nic-netns each tapped node
// also has "nic":{"queued","released","flushed","backlog_mean","backlog_max","transit_mean_ms",
// "transit_max_ms","starved_ms"}: its host's queue in front of the device (host_nic.h), the
// emulation's hop from a release to the device, and the time the device sat empty while a
// released frame was still on that hop (air a real driver would not have lost).
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
// A line `down <k>` takes station k off the air before netloop brings its host's tap down
// (out of range, its MAC queues dropped, in ap mode disassociated, nothing written to its tap),
// `up <k>` brings it back before the tap goes up again (ap mode: it scans and associates anew),
// `open <k>` after (what it receives reaches the tap again); each change is a "station" line
// {"type":"station","wall":..,"sim_s":..,"node":k,"event":"left"|"rejoining"|"joined"|"open"|
// "associated"|"disassociated"} (station_presence.h).
//
// Two ns-3 3.37 packaging problems are handled:
//  * (here) the TapBridge library execs its tap-creator helper at a path fixed when Debian built
//    it, which does not exist. This program defines execlp(), which takes precedence over
//    libc's for the library's call, and redirects a missing "*tap-creator" to
//    $NETLOOP_TAP_CREATOR or NETLOOP_TAP_CREATOR_DEFAULT.
//  * (wifi_topology.cc) in UseLocal mode the device's MAC changes but its
//    FrameExchangeManager keeps the old one (no 802.11 ACKs). ConfigureLocal mode gives the
//    tap the device's MAC instead, so the MAC never changes.
//
// The program's parts, one job per file, are listed in src/ns3/README.md.

#include "background_traffic.h"
#include "host_nic.h"
#include "link_monitor.h"
#include "node_traces.h"
#include "qos_classifier.h"
#include "station_presence.h"
#include "wifi_channel.h"
#include "wifi_options.h"
#include "wifi_stats.h"
#include "wifi_topology.h"

#include "ns3/core-module.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

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
using namespace netloop::wifi;

namespace
{

/// The command line into `o` (ns-3's CommandLine: --help lists these).
void
ParseCommandLine(int argc, char* argv[], WifiOptions& o)
{
    std::string taps;
    std::string ips;
    std::string nicNetns;
    std::string priority;
    std::string packetUs;
    CommandLine cmd(__FILE__);
    cmd.Usage("Real-time 802.11a/g/n channel between Linux tap devices (see the file header).");
    cmd.AddValue("taps", "comma-separated tap device names, one per node (2 or 3)", taps);
    cmd.AddValue("ips", "comma-separated IPv4 addresses given to the taps", ips);
    cmd.AddValue("netmask", "IPv4 netmask of the taps", o.netmask);
    cmd.AddValue("standard", "80211a, 80211g or 80211n (2.4 GHz, 20 MHz)", o.standard);
    cmd.AddValue("mode", "adhoc (stations talk directly) or ap (stations of an access point)", o.mode);
    cmd.AddValue("manager", "constant (fixed --rate), ideal (IdealWifiManager) or minstrel "
                 "(MinstrelWifiManager; MinstrelHtWifiManager for 80211n)", o.manager);
    cmd.AddValue("frame-error-rate", "probability that a received data frame is lost (0..1); "
                 "control frames are not", o.frameErrorRate);
    cmd.AddValue("error-burst", "mean length in frames of a run of lost data frames (1 = "
                 "independent losses)", o.errorBurst);
    cmd.AddValue("retry-limit", "802.11 retry limit (MaxSsrc and MaxSlrc)", o.retryLimit);
    cmd.AddValue("background-pairs", "pairs of other stations on the channel (ad-hoc only), "
                 "each sending a Poisson stream of unicast frames to its partner", o.backgroundPairs);
    cmd.AddValue("background-mbit", "offered rate of each background pair, Mbit/s of frame "
                 "payload", o.backgroundMbit);
    cmd.AddValue("background-bytes", "payload bytes of a background frame", o.backgroundBytes);
    cmd.AddValue("qos", "802.11e: QoS MACs with EDCA access categories, each frame's chosen "
                 "from its DSCP as Linux's mac80211 does (see qos_classifier.h)", o.qos);
    cmd.AddValue("nic-netns", "comma-separated network namespace paths, one per tap: each host's "
                 "NFQUEUE 0 holds what it sends until its device has room (host_nic.h)", nicNetns);
    cmd.AddValue("nic-ring-frames", "frames a device holds (the one on the air included) before "
                 "its host's queue waits", o.nicRingFrames);
    cmd.AddValue("nic-limit", "packets a host's queue holds; the kernel drops beyond", o.nicLimit);
    cmd.AddValue("nic-priority-dscp", "comma-separated DSCPs a host's queue releases first",
                 priority);
    cmd.AddValue("nic-packet-us", "comma-separated, one per tap: microseconds the host's NIC spends "
                 "on each packet it sends (0: none)", packetUs);
    cmd.AddValue("small-bytes", "packets up to this size count as small in the queue stats",
                 o.smallBytes);
    cmd.AddValue("rate", "fixed data mode of --manager constant (e.g. OfdmRate6Mbps, "
                 "ErpOfdmRate54Mbps, HtMcs7)", o.rate);
    cmd.AddValue("distance", "metres between neighbouring nodes on the line", o.distance);
    cmd.AddValue("layout", "line (nodes on a line) or star (around the last tap, or the access point)",
                 o.layout);
    cmd.AddValue("range", "propagation cut-off in metres (0 = unlimited)", o.range);
    cmd.AddValue("tx-power", "transmit power, dBm", o.txPower);
    cmd.AddValue("rts-threshold", "RTS/CTS threshold in bytes (65535 = off)", o.rtsThreshold);
    cmd.AddValue("queue", "Wi-Fi MAC queue size, packets", o.queuePackets);
    cmd.AddValue("seed", "ns-3 random seed", o.seed);
    cmd.AddValue("stats", "file to append JSON lines (ready, stats, final) to", o.statsPath);
    cmd.AddValue("stats-interval", "seconds between stats lines", o.statsInterval);
    cmd.AddValue("probe-ms", "milliseconds between real-time lag probes", o.probeMs);
    cmd.AddValue("lag-bound", "lag in ms above which a probe counts as late", o.lagBoundMs);
    cmd.AddValue("warmup", "simulated seconds before lag is counted", o.warmup);
    cmd.AddValue("duration", "stop after this many seconds (0 = until SIGTERM)", o.duration);
    cmd.Parse(argc, argv);
    o.taps = SplitList(taps);
    o.ips = SplitList(ips);
    o.nicNetns = SplitList(nicNetns);
    for (const std::string& d : SplitList(priority))
    {
        o.nicPriorityDscp.push_back(static_cast<uint8_t>(std::stoul(d) & 0x3f));
    }
    for (const std::string& us : SplitList(packetUs))
    {
        o.nicPacketUs.push_back(std::stod(us));
    }
}

/// The real-time simulator, the seed and the defaults every device takes (queue, RTS, retries).
void
ConfigureSimulator(const WifiOptions& o)
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue("ns3::RealtimeSimulatorImpl"));
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    RngSeedManager::SetSeed(o.seed);
    Config::SetDefault("ns3::WifiMacQueue::MaxSize",
                       QueueSizeValue(QueueSize(std::to_string(o.queuePackets) + "p")));
    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold",
                       UintegerValue(o.rtsThreshold));
    Config::SetDefault("ns3::WifiRemoteStationManager::MaxSsrc", UintegerValue(o.retryLimit));
    Config::SetDefault("ns3::WifiRemoteStationManager::MaxSlrc", UintegerValue(o.retryLimit));
}

int
Fail(int code, const std::string& message)
{
    std::fprintf(stderr, "netloop_wifi_link: %s\n", message.c_str());
    return code;
}

} // namespace

int
main(int argc, char* argv[])
{
    WifiOptions o;
    ParseCommandLine(argc, argv, o);
    std::string error = ValidateOptions(o);
    if (!error.empty())
    {
        return Fail(2, error);
    }
    StatsFile stats;
    if (!o.statsPath.empty() && !stats.Open(o.statsPath, error))
    {
        return Fail(2, error);
    }
    InstallStopSignals();
    ConfigureSimulator(o);

    // Order matters for the random streams (and so for a seed's results): the devices, the
    // background stations, then the error models.
    const StandardChoice standard = ChooseStandard(o.standard);
    WifiNetwork net;
    ConfigureWifi(o, standard, net.wifi);
    ConfigurePhy(o, standard, net.phy);
    BuildNetwork(o, net);
    BackgroundTraffic background;
    background.Install(o, net);
    NodeTraces traces(o.smallBytes);
    traces.Install(net.all);
    if (o.qos)
    {
        InstallQosClassifier(net.tapped, net.all, traces.Counters());
    }
    ChannelErrors errors;
    errors.Install(net.all, o.frameErrorRate, o.errorBurst, traces.Counters());
    InstallTapBridges(o, net);
    HostNics nics;
    if (!nics.Install(o, net.tapped, error))
    {
        return Fail(2, error);
    }

    StationPresence presence(stats);
    presence.Install(net.tapped);
    LinkMonitor monitor(o, stats, traces, errors.Bursts(), presence, background, nics);
    if (!monitor.Start(net.tapped))
    {
        return Fail(1, "real-time simulator not active");
    }
    nics.Start();
    if (o.duration > 0)
    {
        Simulator::Stop(Seconds(o.duration));
    }
    Simulator::Run();
    monitor.WriteFinal();
    Simulator::Destroy();
    return 0;
}
