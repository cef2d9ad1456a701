#include "link_monitor.h"

#include "ns3/mac48-address.h"
#include "ns3/simulator.h"
#include "wifi_topology.h"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <net/if.h>
#include <sstream>
#include <unistd.h>

namespace netloop::wifi
{

using namespace ns3;

namespace
{

// The one mutable global: a signal handler has no way to reach an object (POSIX passes it
// nothing but the signal number), so it sets this flag and the next lag probe stops the run.
volatile std::sig_atomic_t g_stopRequested = 0;

void
OnStopSignal(int)
{
    g_stopRequested = 1;
}

Time
FromSeconds(double s)
{
    return MicroSeconds(static_cast<int64_t>(s * 1e6));
}

} // namespace

void
InstallStopSignals()
{
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnStopSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
}

LinkMonitor::LinkMonitor(const WifiOptions& o,
                         StatsFile& stats,
                         NodeTraces& traces,
                         LossBursts& bursts,
                         StationPresence& presence,
                         const BackgroundTraffic& background,
                         HostNics& nics)
    : m_stats(stats),
      m_traces(traces),
      m_bursts(bursts),
      m_presence(presence),
      m_background(background),
      m_nics(nics),
      m_taps(o.taps),
      m_probe(MicroSeconds(static_cast<int64_t>(o.probeMs * 1000))),
      m_statsInterval(FromSeconds(o.statsInterval)),
      m_warmup(FromSeconds(o.warmup)),
      m_lag(o.lagBoundMs)
{
}

bool
LinkMonitor::Start(const NetDeviceContainer& tapped)
{
    m_rt = dynamic_cast<RealtimeSimulatorImpl*>(PeekPointer(Simulator::GetImplementation()));
    if (!m_rt)
    {
        return false;
    }
    m_tapped = tapped;
    Simulator::Schedule(MilliSeconds(1), &LinkMonitor::CheckReady, this);
    Simulator::Schedule(m_probe, &LinkMonitor::Probe, this);
    Simulator::Schedule(m_statsInterval, &LinkMonitor::PeriodicStats, this);
    // the control input: netloop's pipe (a terminal's is left alone: O_NONBLOCK would outlive us)
    if (!isatty(STDIN_FILENO) &&
        fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK) == 0)
    {
        Simulator::Schedule(MilliSeconds(10), &LinkMonitor::ReadControl, this);
    }
    return true;
}

void
LinkMonitor::CheckReady()
{
    for (const std::string& tap : m_taps)
    {
        if (if_nametoindex(tap.c_str()) == 0)
        {
            Simulator::Schedule(MilliSeconds(1), &LinkMonitor::CheckReady, this);
            return;
        }
    }
    if (!StationsAssociated(m_tapped))
    {
        Simulator::Schedule(MilliSeconds(1), &LinkMonitor::CheckReady, this);
        return;
    }
    if (m_stats.IsOpen())
    {
        std::vector<std::string> macs;
        for (uint32_t i = 0; i < m_tapped.GetN(); ++i)
        {
            std::ostringstream mac;
            mac << Mac48Address::ConvertFrom(m_tapped.Get(i)->GetAddress());
            macs.push_back(mac.str());
        }
        m_stats.Write(FormatReadyLine(WallNow(), getpid(), Simulator::Now().GetSeconds(), macs));
    }
}

void
LinkMonitor::Probe()
{
    if (g_stopRequested)
    {
        Simulator::Stop();
        return;
    }
    if (Simulator::Now() >= m_warmup)
    {
        m_lag.Probe((m_rt->RealtimeNow() - Simulator::Now()).GetSeconds() * 1e3, WallNow());
        m_traces.SampleQueues();
        m_nics.Sample();
    }
    Simulator::Schedule(m_probe, &LinkMonitor::Probe, this);
}

void
LinkMonitor::PeriodicStats()
{
    WriteLine("stats");
    Simulator::Schedule(m_statsInterval, &LinkMonitor::PeriodicStats, this);
}

void
LinkMonitor::WriteLine(const char* type)
{
    if (!m_stats.IsOpen())
    {
        return;
    }
    StatsSnapshot s;
    s.wall = WallNow();
    s.simS = Simulator::Now().GetSeconds();
    s.lag = m_lag.Stats();
    s.lagBoundMs = m_lag.BoundMs();
    s.usage = ReadProcessUsage();
    s.stalls = m_lag.TakeStalls(std::strcmp(type, "final") == 0);
    s.nodes = m_traces.Counters();
    for (uint32_t k = 0; k < s.nodes.size(); ++k)
    {
        if (const NicCounts* nic = m_nics.Counts(k))
        {
            s.nodes[k].hasNic = true;
            s.nodes[k].nic = *nic;
        }
    }
    s.background = m_background.Counts();
    m_stats.Write(FormatStatsLine(type, s));
    m_traces.EndInterval();
    m_nics.EndInterval();
    m_lag.EndInterval();
}

/// Every 10 ms: the lines that arrived on standard input; stops at EOF.
void
LinkMonitor::ReadControl()
{
    char buf[4096];
    ssize_t got;
    while ((got = read(STDIN_FILENO, buf, sizeof buf)) > 0)
    {
        m_control.Append(buf, got);
    }
    std::string line;
    while (m_control.Next(line))
    {
        StationSwitch station;
        std::string error = ParseStationLine(line, m_tapped.GetN(), station);
        if (error.empty())
        {
            error = station.action != StationSwitch::kNone ? m_presence.Switch(station)
                                                           : ApplyControl(line, m_bursts);
        }
        if (error.empty() && station.action == StationSwitch::kDown)
        {
            m_nics.Flush(station.node); // the host's interface goes down: its queue is dropped
        }
        if (m_stats.IsOpen())
        {
            m_stats.Write(FormatControlLine(WallNow(), line, error));
        }
    }
    if (got == 0)
    {
        return; // the controller closed it: nothing more will come
    }
    Simulator::Schedule(MilliSeconds(10), &LinkMonitor::ReadControl, this);
}

} // namespace netloop::wifi
