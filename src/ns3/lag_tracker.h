// How far the real-time simulator runs behind the wall clock: the lag probes' statistics and
// the stalls (runs of consecutive probes later than --lag-bound). No ns-3 here: the link
// monitor (link_monitor.h) feeds it; unit-tested in test/cpp/test_wifi_link.cpp.
#pragma once

#include "wifi_stats.h"

#include <vector>

namespace netloop::wifi
{

class LagTracker
{
  public:
    explicit LagTracker(double boundMs)
        : m_boundMs(boundMs)
    {
    }

    /// One probe taken at `wall` (epoch s), `lagMs` behind (a negative lag counts as 0).
    void Probe(double lagMs, double wall);

    /// The stalls that ended since the last call; with `final`, the one under way too (ended
    /// there).
    std::vector<Stall> TakeStalls(bool final);

    /// After a stats line: the interval figures start again.
    void EndInterval();

    const LagStats& Stats() const
    {
        return m_lag;
    }

    double BoundMs() const
    {
        return m_boundMs;
    }

    bool InStall() const
    {
        return m_inStall;
    }

  private:
    double m_boundMs;
    LagStats m_lag;
    bool m_inStall = false;
    Stall m_stall;              // the one under way, when m_inStall
    std::vector<Stall> m_ended; // since the last TakeStalls
};

} // namespace netloop::wifi
