#include "wifi_stats.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <sys/resource.h>
#include <sys/time.h>

namespace netloop::wifi
{

void
NodeCounters::SampleQueue(uint32_t length)
{
    qSamples++;
    qSum += length;
    qMax = std::max(qMax, length);
    qMaxTotal = std::max(qMaxTotal, length);
}

void
NodeCounters::Arrival(uint32_t ahead, bool small)
{
    arrivals++;
    aheadSum += ahead;
    if (small)
    {
        smallArrivals++;
        smallAheadSum += ahead;
        smallAheadMax = std::max(smallAheadMax, ahead);
    }
}

uint64_t
NodeCounters::QueueRefused() const
{
    uint64_t enqueued = arrivals;
    if (qos)
    {
        enqueued = acEnqueued[0] + acEnqueued[1] + acEnqueued[2] + acEnqueued[3];
    }
    return macTx > enqueued ? macTx - enqueued : 0;
}

void
NodeCounters::EndInterval()
{
    qSamples = 0;
    qSum = 0;
    qMax = 0;
}

double
WallNow()
{
    struct timeval tv;
    gettimeofday(&tv, nullptr);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

ProcessUsage
ReadProcessUsage()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    ProcessUsage u;
    u.cpuS = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
             ru.ru_stime.tv_usec * 1e-6;
    u.minorFaults = ru.ru_minflt;
    u.majorFaults = ru.ru_majflt;
    u.involuntarySwitches = ru.ru_nivcsw;
    return u;
}

namespace
{

double
Mean(double sum, uint64_t count)
{
    return count ? sum / count : 0.0;
}

void
WriteNode(std::ostream& os, const NodeCounters& c)
{
    os << "{\"mac_tx\":" << c.macTx << ",\"mac_rx\":" << c.macRx << ",\"queue_drop\":" << c.queueDrop
       << ",\"retries\":" << c.retries << ",\"final_fail\":" << c.finalFail
       << ",\"phy_tx_drop\":" << c.phyTxDrop << ",\"phy_rx_drop\":" << c.phyRxDrop
       << ",\"data_mpdu_tx\":" << c.dataMpduTx << ",\"data_ppdu_tx\":" << c.dataPpduTx
       << ",\"fer_drops\":" << c.corrupted
       << ",\"burst_drops\":" << c.burstCorrupted
       << ",\"mac_queue_mean\":" << Mean(double(c.qSum), c.qSamples)
       << ",\"mac_queue_max\":" << c.qMax << ",\"mac_queue_max_total\":" << c.qMaxTotal
       << ",\"mac_queue_drop\":" << c.QueueRefused() << ",\"mac_queue_arrivals\":" << c.arrivals
       << ",\"mac_queue_ahead_mean\":" << Mean(double(c.aheadSum), c.arrivals)
       << ",\"small_arrivals\":" << c.smallArrivals
       << ",\"small_ahead_mean\":" << Mean(double(c.smallAheadSum), c.smallArrivals)
       << ",\"small_ahead_max\":" << c.smallAheadMax;
    if (c.qos)
    {
        os << ",\"ac_enqueued\":{\"BE\":" << c.acEnqueued[0] << ",\"BK\":" << c.acEnqueued[1]
           << ",\"VI\":" << c.acEnqueued[2] << ",\"VO\":" << c.acEnqueued[3] << "}";
    }
    if (c.hasNic)
    {
        os << ",\"nic\":{\"queued\":" << c.nic.queued << ",\"released\":" << c.nic.released
           << ",\"flushed\":" << c.nic.flushed
           << ",\"backlog_mean\":" << Mean(double(c.nic.backlogSum), c.nic.samples)
           << ",\"backlog_max\":" << c.nic.backlogMax
           << ",\"transit_mean_ms\":" << 1e3 * Mean(c.nic.transitSum, c.nic.arrived)
           << ",\"transit_max_ms\":" << 1e3 * c.nic.transitMax
           << ",\"starved_ms\":" << 1e3 * c.nic.starvedS << "}";
    }
    os << "}";
}

} // namespace

std::string
FormatStatsLine(const char* type, const StatsSnapshot& s)
{
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(6);
    const LagStats& lag = s.lag;
    os << "{\"type\":\"" << type << "\",\"wall\":" << s.wall << ",\"sim_s\":" << s.simS
       << ",\"lag_max_ms\":" << lag.intervalMax
       << ",\"lag_mean_ms\":" << Mean(lag.intervalSum, lag.intervalCount)
       << ",\"lag_max_total_ms\":" << lag.totalMax
       << ",\"lag_mean_total_ms\":" << Mean(lag.totalSum, lag.totalCount)
       << ",\"probes\":" << lag.totalCount << ",\"late_probes\":" << lag.late
       << ",\"lag_bound_ms\":" << s.lagBoundMs << ",\"cpu_s\":" << s.usage.cpuS << ",\"stalls\":[";
    for (size_t i = 0; i < s.stalls.size(); ++i)
    {
        const Stall& st = s.stalls[i];
        os << (i ? "," : "") << "[" << st.startWall << "," << st.maxMs << "," << st.probes << "]";
    }
    os << "],\"minor_faults\":" << s.usage.minorFaults << ",\"major_faults\":" << s.usage.majorFaults
       << ",\"involuntary_switches\":" << s.usage.involuntarySwitches << ",\"nodes\":[";
    for (size_t i = 0; i < s.nodes.size(); ++i)
    {
        os << (i ? "," : "");
        WriteNode(os, s.nodes[i]);
    }
    os << "]";
    if (s.background.pairs > 0)
    {
        os << ",\"background\":{\"pairs\":" << s.background.pairs
           << ",\"offered\":" << s.background.offered << ",\"sent\":" << s.background.sent
           << ",\"queue_drop\":" << s.background.dropped << "}";
    }
    os << "}\n";
    return os.str();
}

std::string
FormatReadyLine(double wall, long pid, double simS, const std::vector<std::string>& macs)
{
    std::ostringstream os;
    os << "{\"type\":\"ready\",\"wall\":" << std::fixed << wall << ",\"pid\":" << pid
       << ",\"sim_s\":" << simS << ",\"macs\":[";
    for (size_t i = 0; i < macs.size(); ++i)
    {
        os << (i ? "," : "") << "\"" << macs[i] << "\"";
    }
    os << "]}\n";
    return os.str();
}

std::string
FormatControlLine(double wall, const std::string& line, const std::string& error)
{
    // both strings may hold what the control input wrote (a node name): no quote, backslash
    // or control character reaches the JSON line
    auto shown = [](std::string text) {
        for (char& ch : text)
        {
            ch = (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ? '?' : ch;
        }
        return text;
    };
    char head[64];
    std::snprintf(head, sizeof head, "{\"type\":\"control\",\"wall\":%.6f,\"line\":\"", wall);
    return head + shown(line) + "\",\"error\":" + (error.empty() ? "null" : "\"" + shown(error) + "\"") +
           "}\n";
}

std::string
FormatStationLine(double wall, double simS, long node, const char* event)
{
    char line[160];
    std::snprintf(line, sizeof line,
                  "{\"type\":\"station\",\"wall\":%.6f,\"sim_s\":%.6f,\"node\":%ld,\"event\":\"%s\"}\n",
                  wall, simS, node, event);
    return line;
}

StatsFile::~StatsFile()
{
    if (m_file)
    {
        std::fclose(m_file);
    }
}

bool
StatsFile::Open(const std::string& path, std::string& error)
{
    m_file = std::fopen(path.c_str(), "a");
    if (!m_file)
    {
        error = "cannot open " + path + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

void
StatsFile::Write(const std::string& line)
{
    if (m_file)
    {
        std::fputs(line.c_str(), m_file);
        std::fflush(m_file);
    }
}

} // namespace netloop::wifi
