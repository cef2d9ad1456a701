#include "nic_queue.h"

#include <algorithm>
#include <utility>

namespace netloop::wifi
{

NicQueue::NicQueue(uint32_t ringFrames, double transitS, std::vector<uint8_t> priority, double packetS)
    : m_ringFrames(std::max<uint32_t>(1, ringFrames)),
      m_transitS(transitS),
      m_priority(std::move(priority)),
      m_packetS(packetS)
{
}

bool
NicQueue::Marked(uint8_t dscp) const
{
    return std::find(m_priority.begin(), m_priority.end(), dscp) != m_priority.end();
}

uint32_t
NicQueue::Frames(uint32_t bytes)
{
    constexpr uint32_t kIpHeader = 20;
    constexpr uint32_t kPerFragment = 1480; // a 1500-byte MTU less the IP header
    return bytes <= kIpHeader ? 1 : std::max<uint32_t>(1, (bytes - kIpHeader + kPerFragment - 1) / kPerFragment);
}

void
NicQueue::Queued(const nfq::QueuedPacket& p)
{
    (Marked(p.dscp) ? m_marked : m_unmarked).push_back(Waiting{p.id, Frames(p.bytes)});
    m_counts.queued++;
}

std::vector<uint32_t>
NicQueue::Release(double now, uint32_t deviceFrames)
{
    while (!m_transit.empty() && now - m_transit.front() > m_transitS)
    {
        m_transit.pop_front();
    }
    std::vector<uint32_t> out;
    // a nanosecond's slack: the simulator's clock is in whole nanoseconds
    while (Backlog() && deviceFrames + m_transit.size() < m_ringFrames && now + 1e-9 >= m_nextFree)
    {
        m_nextFree = m_packetS > 0 ? std::max(now, m_nextFree) + m_packetS : 0.0;
        std::deque<Waiting>& from = m_marked.empty() ? m_unmarked : m_marked;
        out.push_back(from.front().id);
        m_transit.insert(m_transit.end(), from.front().frames, now);
        from.pop_front();
        m_counts.released++;
    }
    return out;
}

void
NicQueue::ReachedDevice(double now)
{
    if (!m_transit.empty())
    {
        const double took = now - m_transit.front();
        m_counts.arrived++;
        m_counts.transitSum += took;
        m_counts.transitMax = std::max(m_counts.transitMax, took);
        m_transit.pop_front();
    }
}

void
NicQueue::Observe(double now, uint32_t deviceFrames)
{
    const bool starved = deviceFrames == 0 && !m_transit.empty();
    if (m_starvedSince >= 0.0 && !starved)
    {
        m_counts.starvedS += now - m_starvedSince;
        m_starvedSince = -1.0;
    }
    else if (m_starvedSince < 0.0 && starved)
    {
        m_starvedSince = now;
    }
}

void
NicQueue::Flush()
{
    m_counts.flushed += Backlog();
    m_marked.clear();
    m_unmarked.clear();
    m_transit.clear();
    m_starvedSince = -1.0;
}

void
NicQueue::Sample()
{
    const auto backlog = static_cast<uint32_t>(Backlog());
    m_counts.samples++;
    m_counts.backlogSum += backlog;
    m_counts.backlogMax = std::max(m_counts.backlogMax, backlog);
}

} // namespace netloop::wifi
