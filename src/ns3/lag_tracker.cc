#include "lag_tracker.h"

#include <algorithm>

namespace netloop::wifi
{

void
LagTracker::Probe(double lagMs, double wall)
{
    if (lagMs < 0)
    {
        lagMs = 0;
    }
    m_lag.intervalMax = std::max(m_lag.intervalMax, lagMs);
    m_lag.intervalSum += lagMs;
    m_lag.intervalCount++;
    m_lag.totalMax = std::max(m_lag.totalMax, lagMs);
    m_lag.totalSum += lagMs;
    m_lag.totalCount++;
    if (lagMs > m_boundMs)
    {
        m_lag.late++;
        if (!m_inStall)
        {
            m_inStall = true;
            m_stall = Stall{wall - lagMs / 1e3, 0.0, 0};
        }
        m_stall.maxMs = std::max(m_stall.maxMs, lagMs);
        m_stall.probes++;
    }
    else if (m_inStall)
    {
        m_ended.push_back(m_stall);
        m_inStall = false;
    }
}

std::vector<Stall>
LagTracker::TakeStalls(bool final)
{
    if (final && m_inStall)
    {
        m_ended.push_back(m_stall);
        m_inStall = false;
    }
    std::vector<Stall> out;
    out.swap(m_ended);
    return out;
}

void
LagTracker::EndInterval()
{
    m_lag.intervalMax = 0;
    m_lag.intervalSum = 0;
    m_lag.intervalCount = 0;
}

} // namespace netloop::wifi
