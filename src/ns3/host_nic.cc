#include "host_nic.h"

#include "nfqueue.h"

#include "ns3/callback.h"
#include "ns3/llc-snap-header.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/txop.h"
#include "ns3/wifi-mac.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

namespace netloop::wifi
{

using namespace ns3;

namespace
{

constexpr uint16_t kQueue = 0;        // the queue number of the hosts' NFQUEUE rule
constexpr uint32_t kCopyBytes = 64;   // enough of each packet for its IPv4 header
constexpr size_t kReadBytes = 8192;   // one netlink message per recv(): a few hundred bytes
constexpr int kSocketBuffer = 4 << 20; // the kernel drops what it cannot hand us: room for bursts
constexpr double kTransitS = 0.05;    // a released packet not at the device after this is lost
constexpr uint16_t kIpv4 = 0x0800;

/// Reads one netlink message per call; the callback frees the buffer.
class NetlinkReader : public FdReader
{
  protected:
    Data DoRead() override
    {
        auto* buf = new uint8_t[kReadBytes];
        ssize_t n = recv(m_fd, buf, kReadBytes, 0);
        if (n <= 0)
        {
            delete[] buf;
            return Data(nullptr, -1); // ENOBUFS and the like: skipped, the reader goes on
        }
        return Data(buf, n);
    }
};

/// A netlink netfilter socket created in the network namespace at `path`; -1 with `error`.
int
SocketIn(const std::string& path, std::string& error)
{
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    int fd = -1;
    if (self < 0 || target < 0)
    {
        error = "cannot open network namespace " + path + ": " + std::strerror(errno);
    }
    else if (setns(target, CLONE_NEWNET) != 0)
    {
        error = "cannot enter network namespace " + path + ": " + std::strerror(errno);
    }
    else
    {
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
        if (fd < 0)
        {
            error = std::string("netfilter netlink socket: ") + std::strerror(errno);
        }
        if (setns(self, CLONE_NEWNET) != 0)
        {
            error = std::string("cannot return to the link's namespace: ") + std::strerror(errno);
            if (fd >= 0)
            {
                close(fd);
            }
            fd = -1;
        }
    }
    if (self >= 0)
    {
        close(self);
    }
    if (target >= 0)
    {
        close(target);
    }
    return fd;
}

/// Sends a configuration request and waits for the kernel's answer: "" or the error.
std::string
Configure(int fd, const std::vector<uint8_t>& msg)
{
    if (send(fd, msg.data(), msg.size(), 0) < 0)
    {
        return std::strerror(errno);
    }
    uint8_t buf[kReadBytes];
    ssize_t n;
    do
    {
        n = recv(fd, buf, sizeof buf, 0); // the acknowledgement
    } while (n < 0 && errno == EINTR);
    if (n < 0)
    {
        return std::strerror(errno);
    }
    int err = nfq::Parse(buf, n).error;
    return err ? std::strerror(-err) : "";
}

void
Send(int fd, const std::vector<uint8_t>& msg)
{
    send(fd, msg.data(), msg.size(), MSG_DONTWAIT);
}

} // namespace

HostNics::~HostNics()
{
    for (auto& nic : m_nics)
    {
        if (nic->fd >= 0)
        {
            close(nic->fd);
        }
    }
}

bool
HostNics::Install(const WifiOptions& o, const NetDeviceContainer& tapped, std::string& error)
{
    for (uint32_t k = 0; k < o.nicNetns.size() && k < tapped.GetN(); ++k)
    {
        const double packetS = k < o.nicPacketUs.size() ? o.nicPacketUs[k] * 1e-6 : 0.0;
        auto nic = std::make_unique<Nic>(o.nicRingFrames, kTransitS, o.nicPriorityDscp, packetS);
        nic->fd = SocketIn(o.nicNetns[k], error);
        if (nic->fd < 0)
        {
            return false;
        }
        setsockopt(nic->fd, SOL_SOCKET, SO_RCVBUFFORCE, &kSocketBuffer, sizeof kSocketBuffer);
        int on = 1;
        setsockopt(nic->fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);
        sockaddr_nl local{};
        local.nl_family = AF_NETLINK;
        std::string why;
        if (bind(nic->fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
        {
            why = std::strerror(errno);
        }
        if (why.empty())
        {
            why = Configure(nic->fd, nfq::BindMessage(kQueue, 1));
        }
        if (why.empty())
        {
            why = Configure(nic->fd, nfq::ParamsMessage(kQueue, kCopyBytes, o.nicLimit, 2));
        }
        if (!why.empty())
        {
            error = "cannot bind the netfilter queue of " + o.nicNetns[k] + ": " + why;
            close(nic->fd);
            return false;
        }
        nic->device = DynamicCast<WifiNetDevice>(tapped.Get(k));
        nic->node = nic->device->GetNode()->GetId();
        Ptr<WifiMac> mac = nic->device->GetMac();
        if (mac->GetTxop())
        {
            nic->macQueues.push_back(mac->GetTxop()->GetWifiMacQueue());
        }
        else
        {
            for (AcIndex ac : {AC_BE, AC_BK, AC_VI, AC_VO})
            {
                nic->macQueues.push_back(mac->GetTxopQueue(ac));
            }
        }
        m_nics.push_back(std::move(nic));
    }
    for (size_t k = 0; k < m_nics.size(); ++k)
    {
        Nic& nic = *m_nics[k];
        nic.device->GetMac()->TraceConnectWithoutContext(
            "MacTx",
            MakeCallback(&HostNics::FromHost, this, k));
        for (const Ptr<WifiMacQueue>& q : nic.macQueues)
        {
            for (const char* trace : {"Dequeue", "Drop", "Expired"})
            {
                q->TraceConnectWithoutContext(trace, MakeCallback(&HostNics::Left, this, k));
            }
        }
    }
    return true;
}

void
HostNics::Start()
{
    for (size_t k = 0; k < m_nics.size(); ++k)
    {
        m_nics[k]->reader = Create<NetlinkReader>();
        m_nics[k]->reader->Start(m_nics[k]->fd, MakeCallback(&HostNics::Read, this, k));
    }
}

void
HostNics::Read(size_t k, uint8_t* buf, ssize_t len)
{
    nfq::Received got = nfq::Parse(buf, len);
    delete[] buf;
    if (!got.packets.empty())
    {
        Simulator::ScheduleWithContext(m_nics[k]->node, Seconds(0), &HostNics::Queued, this, k,
                                       std::move(got.packets));
    }
}

void
HostNics::Queued(size_t k, std::vector<nfq::QueuedPacket> packets)
{
    for (const nfq::QueuedPacket& p : packets)
    {
        m_nics[k]->queue.Queued(p);
    }
    Pump(k);
}

uint32_t
HostNics::DeviceFrames(const Nic& nic) const
{
    uint32_t n = 0;
    for (const Ptr<WifiMacQueue>& q : nic.macQueues)
    {
        n += q->GetNPackets();
    }
    return n;
}

void
HostNics::Pump(size_t k)
{
    Nic& nic = *m_nics[k];
    const double now = Simulator::Now().GetSeconds();
    const uint32_t deviceFrames = DeviceFrames(nic);
    for (uint32_t id : nic.queue.Release(now, deviceFrames))
    {
        Send(nic.fd, nfq::AcceptMessage(kQueue, id));
    }
    nic.queue.Observe(now, deviceFrames); // every change of either comes through here
    if (nic.queue.Backlog() && nic.queue.NextFree() > now && !nic.wake.IsRunning())
    {
        const auto wait = static_cast<int64_t>(std::ceil((nic.queue.NextFree() - now) * 1e9));
        nic.wake = Simulator::Schedule(NanoSeconds(std::max<int64_t>(1, wait)), &HostNics::Pump, this, k);
    }
}

void
HostNics::FromHost(size_t k, Ptr<const Packet> packet)
{
    LlcSnapHeader llc;
    if (packet->PeekHeader(llc) && llc.GetType() == kIpv4)
    {
        m_nics[k]->queue.ReachedDevice(Simulator::Now().GetSeconds());
        // MacTx comes before the device queues the frame: count it once it has
        Simulator::ScheduleNow(&HostNics::Pump, this, k);
    }
}

void
HostNics::Left(size_t k, Ptr<const WifiMpdu>)
{
    // after the queue has removed the frame: schedule, so that its count is up to date
    Simulator::ScheduleNow(&HostNics::Pump, this, k);
}

void
HostNics::Sample()
{
    for (auto& nic : m_nics)
    {
        nic->queue.Sample();
    }
}

void
HostNics::Flush(uint32_t k)
{
    if (k < m_nics.size())
    {
        m_nics[k]->queue.Flush();
    }
}

NicCounts*
HostNics::Counts(uint32_t k)
{
    return k < m_nics.size() ? &m_nics[k]->queue.Counts() : nullptr;
}

void
HostNics::EndInterval()
{
    for (auto& nic : m_nics)
    {
        nic->queue.Counts().EndInterval();
    }
}

} // namespace netloop::wifi
