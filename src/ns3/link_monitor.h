// What netloop_wifi_link does while the simulation runs: the "ready" line once every tap exists
// and every station is associated, a lag probe every --probe-ms (how late the real-time
// simulator runs; the MAC queues sampled), a stats line every --stats-interval, the control
// input read every 10 ms (loss bursts; stations leaving and rejoining), and the stop on SIGTERM/SIGINT.
#pragma once

#include "background_traffic.h"
#include "control_input.h"
#include "host_nic.h"
#include "lag_tracker.h"
#include "node_traces.h"
#include "station_presence.h"
#include "wifi_options.h"
#include "wifi_stats.h"

#include "ns3/net-device-container.h"
#include "ns3/nstime.h"
#include "ns3/realtime-simulator-impl.h"

#include <string>
#include <vector>

namespace netloop::wifi
{

/// SIGTERM and SIGINT end the simulation at the next lag probe (then the "final" line).
void InstallStopSignals();

class LinkMonitor
{
  public:
    /// Every reference must outlive the simulation (the events point to this object too).
    LinkMonitor(const WifiOptions& o,
                StatsFile& stats,
                NodeTraces& traces,
                LossBursts& bursts,
                StationPresence& presence,
                const BackgroundTraffic& background,
                HostNics& nics);

    LinkMonitor(const LinkMonitor&) = delete;
    LinkMonitor& operator=(const LinkMonitor&) = delete;

    /// Schedules the ready check on `tapped` (the stations' devices), the probes, the stats
    /// lines and, when standard input is a pipe, the control input. False when the simulator
    /// is not the real-time one.
    bool Start(const ns3::NetDeviceContainer& tapped);

    /// The last line, "final" (any stall under way ends there).
    void WriteFinal()
    {
        WriteLine("final");
    }

  private:
    void CheckReady();
    void Probe();
    void PeriodicStats();
    void ReadControl();
    void WriteLine(const char* type);

    StatsFile& m_stats;
    NodeTraces& m_traces;
    LossBursts& m_bursts;
    StationPresence& m_presence;
    const BackgroundTraffic& m_background;
    HostNics& m_nics;
    std::vector<std::string> m_taps;
    ns3::NetDeviceContainer m_tapped;
    ns3::RealtimeSimulatorImpl* m_rt = nullptr;
    ns3::Time m_probe;
    ns3::Time m_statsInterval;
    ns3::Time m_warmup;
    LagTracker m_lag;
    LineBuffer m_control;
};

} // namespace netloop::wifi
