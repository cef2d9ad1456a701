// The statistics file of netloop_wifi_link: what is counted, and the JSON lines written
// ("ready", "stats", "final", "control"; the format is described in wifi_link.cc's header).
// No ns-3 here: the formatting is unit-tested (test/cpp/test_wifi_link.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace netloop::wifi
{

/// What the queue in front of a host's NIC counted (nic_queue.h): a node's "nic".
struct NicCounts
{
    uint64_t queued = 0;   // total: packets the host's kernel queued for the device
    uint64_t released = 0; // total: packets let through to the device
    uint64_t flushed = 0;  // total: dropped by the kernel when the interface went down
    uint64_t samples = 0;  // interval: backlog samples (at each lag probe)
    uint64_t backlogSum = 0;
    uint32_t backlogMax = 0;
    // total: the emulation's own hop from the host to the device (netfilter verdict, tap, the
    // simulator's reader), which a real driver, refilling its ring in the kernel, does not have
    uint64_t arrived = 0;    // released frames that reached the device
    double transitSum = 0.0; // their release-to-device times [s]
    double transitMax = 0.0;
    double starvedS = 0.0;   // time the device held no frame while one was on its way to it [s]

    void EndInterval()
    {
        samples = backlogSum = 0;
        backlogMax = 0;
    }
};

/// What one Wi-Fi device counted: one entry of a stats line's "nodes".
struct NodeCounters
{
    uint64_t macTx = 0;
    uint64_t macRx = 0;
    uint64_t queueDrop = 0; // MacTxDrop: refused by the MAC before queueing (not for a full queue)
    uint64_t retries = 0;
    uint64_t finalFail = 0;
    uint64_t phyTxDrop = 0;
    uint64_t phyRxDrop = 0;
    uint64_t dataMpduTx = 0;
    uint64_t dataPpduTx = 0; // transmissions carrying data: dataMpduTx / dataPpduTx = A-MPDU size
    uint64_t corrupted = 0;      // data frames dropped by the configured frame error rate
    uint64_t burstCorrupted = 0; // data frames dropped by a loss burst (control input)
    // MAC (device) queue: length sampled at every lag probe, and seen by arriving packets
    uint64_t qSamples = 0; // interval
    uint64_t qSum = 0;     // interval
    uint32_t qMax = 0;     // interval
    uint32_t qMaxTotal = 0;
    uint64_t arrivals = 0;      // total
    uint64_t aheadSum = 0;      // total: frames already queued when a packet arrived
    uint64_t smallArrivals = 0; // total, packets of at most --small-bytes
    uint64_t smallAheadSum = 0;
    uint32_t smallAheadMax = 0;
    // --qos (qos_classifier.h): frames that entered each access category's MAC queue, in
    // ns-3's AcIndex order (BE, BK, VI, VO); written as "ac_enqueued" only when qos is set
    bool qos = false;
    std::array<uint64_t, 4> acEnqueued{}; // total
    // --nic-netns (host_nic.h): the host's queue in front of the device; written as "nic"
    bool hasNic = false;
    NicCounts nic;

    /// Frames the MAC took from above (macTx) that never entered its queue: refused by a full
    /// queue (tail drop, --queue). ns-3 3.37's WifiMacQueue refuses them without a trace.
    uint64_t QueueRefused() const;
    /// A queue-length sample (at a lag probe).
    void SampleQueue(uint32_t length);
    /// A packet arrived at the MAC queue with `ahead` frames already in it.
    void Arrival(uint32_t ahead, bool small);
    /// After a stats line: the interval figures start again.
    void EndInterval();
};

/// How late the simulator ran behind the wall clock, over the interval and in total.
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

/// The background stations' frames (background_traffic.h); pairs = 0: no "background" key.
struct BackgroundCounts
{
    size_t pairs = 0;
    uint64_t offered = 0;
    uint64_t sent = 0; // accepted by the sender's MAC queue
    uint64_t dropped = 0;
};

/// getrusage of the whole process.
struct ProcessUsage
{
    double cpuS = 0;
    long minorFaults = 0;
    long majorFaults = 0;
    long involuntarySwitches = 0;
};

/// Everything one stats line says.
struct StatsSnapshot
{
    double wall = 0;
    double simS = 0;
    LagStats lag;
    double lagBoundMs = 0;
    ProcessUsage usage;
    std::vector<Stall> stalls; // over since the last line
    std::vector<NodeCounters> nodes;
    BackgroundCounts background;
};

/// Wall clock, epoch seconds.
double WallNow();
/// This process's CPU time, page faults and involuntary context switches.
ProcessUsage ReadProcessUsage();

/// A "stats" or "final" line (type), newline included.
std::string FormatStatsLine(const char* type, const StatsSnapshot& s);
/// The "ready" line: the devices' MAC addresses in --taps order.
std::string FormatReadyLine(double wall, long pid, double simS, const std::vector<std::string>& macs);
/// The echo of one control-input line (characters JSON would need escaped become '?') and the
/// error applying it gave ("" = applied: null).
std::string FormatControlLine(double wall, const std::string& line, const std::string& error);

/// A station's presence changed (station_presence.h): {"type":"station","wall":..,"sim_s":..,
/// "node":k,"event":"left"|"rejoining"|"joined"|"associated"|"disassociated"}.
std::string FormatStationLine(double wall, double simS, long node, const char* event);

/// The --stats file, appended to and flushed line by line; without --stats nothing is written.
class StatsFile
{
  public:
    StatsFile() = default;
    StatsFile(const StatsFile&) = delete;
    StatsFile& operator=(const StatsFile&) = delete;
    ~StatsFile();

    /// Opens `path` for appending; false with `error` set when it cannot.
    bool Open(const std::string& path, std::string& error);
    bool IsOpen() const
    {
        return m_file != nullptr;
    }
    void Write(const std::string& line);

  private:
    FILE* m_file = nullptr;
};

} // namespace netloop::wifi
