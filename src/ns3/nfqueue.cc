#include "nfqueue.h"

// glibc's socket headers before the kernel's (linux/libc-compat.h then skips its duplicates)
#include <arpa/inet.h>
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>

#include <cstring>

namespace netloop::wifi::nfq
{

namespace
{

constexpr size_t kAlign = 4;

size_t
Aligned(size_t n)
{
    return (n + kAlign - 1) & ~(kAlign - 1);
}

/// A netfilter message of `type` on `queue`, its attributes appended with Attr().
class Message
{
  public:
    /// `ack`: the kernel answers (an NLMSG_ERROR carrying 0 when it applied the request).
    Message(uint16_t type, uint16_t queue, uint32_t seq, bool ack)
    {
        nlmsghdr h{};
        h.nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
        h.nlmsg_flags = NLM_F_REQUEST | (ack ? NLM_F_ACK : 0);
        h.nlmsg_seq = seq;
        Append(&h, sizeof h);
        nfgenmsg g{};
        g.nfgen_family = AF_UNSPEC;
        g.version = NFNETLINK_V0;
        g.res_id = htons(queue);
        Append(&g, sizeof g);
    }

    Message& Attr(uint16_t type, const void* data, size_t n)
    {
        nlattr a{};
        a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + n);
        a.nla_type = type;
        Append(&a, sizeof a);
        Append(data, n);
        m_bytes.resize(Aligned(m_bytes.size()), 0);
        return *this;
    }

    std::vector<uint8_t> Done()
    {
        uint32_t len = static_cast<uint32_t>(m_bytes.size());
        std::memcpy(m_bytes.data(), &len, sizeof len); // nlmsg_len comes first
        return m_bytes;
    }

  private:
    void Append(const void* data, size_t n)
    {
        const auto* p = static_cast<const uint8_t*>(data);
        m_bytes.insert(m_bytes.end(), p, p + n);
    }

    std::vector<uint8_t> m_bytes;
};

/// The packet of one NFQNL_MSG_PACKET message's attributes (`attrs`, `n` bytes).
QueuedPacket
ReadPacket(const uint8_t* attrs, size_t n)
{
    QueuedPacket p;
    uint32_t captured = 0;
    uint32_t capLen = 0;
    size_t off = 0;
    while (off + NLA_HDRLEN <= n)
    {
        nlattr a;
        std::memcpy(&a, attrs + off, sizeof a);
        if (a.nla_len < NLA_HDRLEN || off + a.nla_len > n)
        {
            break;
        }
        const uint8_t* data = attrs + off + NLA_HDRLEN;
        const size_t dataLen = a.nla_len - NLA_HDRLEN;
        switch (a.nla_type & NLA_TYPE_MASK)
        {
        case NFQA_PACKET_HDR:
            if (dataLen >= sizeof(nfqnl_msg_packet_hdr))
            {
                nfqnl_msg_packet_hdr h;
                std::memcpy(&h, data, sizeof h);
                p.id = ntohl(h.packet_id);
            }
            break;
        case NFQA_PAYLOAD:
            captured = static_cast<uint32_t>(dataLen);
            if (dataLen >= 2 && (data[0] >> 4) == 4)
            {
                p.dscp = data[1] >> 2;
            }
            break;
        case NFQA_CAP_LEN:
            if (dataLen >= 4)
            {
                uint32_t v;
                std::memcpy(&v, data, 4);
                capLen = ntohl(v);
            }
            break;
        default:
            break;
        }
        off += Aligned(a.nla_len);
    }
    p.bytes = capLen ? capLen : captured; // NFQA_CAP_LEN only when the copy was cut short
    return p;
}

} // namespace

std::vector<uint8_t>
BindMessage(uint16_t queue, uint32_t seq)
{
    nfqnl_msg_config_cmd cmd{};
    cmd.command = NFQNL_CFG_CMD_BIND;
    cmd.pf = htons(AF_INET);
    return Message(NFQNL_MSG_CONFIG, queue, seq, true).Attr(NFQA_CFG_CMD, &cmd, sizeof cmd).Done();
}

std::vector<uint8_t>
ParamsMessage(uint16_t queue, uint32_t copyBytes, uint32_t maxLen, uint32_t seq)
{
    nfqnl_msg_config_params params{};
    params.copy_range = htonl(copyBytes);
    params.copy_mode = NFQNL_COPY_PACKET;
    uint32_t len = htonl(maxLen);
    return Message(NFQNL_MSG_CONFIG, queue, seq, true)
        .Attr(NFQA_CFG_PARAMS, &params, sizeof params)
        .Attr(NFQA_CFG_QUEUE_MAXLEN, &len, sizeof len)
        .Done();
}

std::vector<uint8_t>
AcceptMessage(uint16_t queue, uint32_t id)
{
    nfqnl_msg_verdict_hdr v{};
    v.verdict = htonl(NF_ACCEPT);
    v.id = htonl(id);
    return Message(NFQNL_MSG_VERDICT, queue, 0, false).Attr(NFQA_VERDICT_HDR, &v, sizeof v).Done();
}

Received
Parse(const uint8_t* buf, size_t len)
{
    Received out;
    size_t off = 0;
    while (off + NLMSG_HDRLEN <= len)
    {
        nlmsghdr h;
        std::memcpy(&h, buf + off, sizeof h);
        if (h.nlmsg_len < NLMSG_HDRLEN || off + h.nlmsg_len > len)
        {
            break;
        }
        if (h.nlmsg_type == NLMSG_ERROR && h.nlmsg_len >= NLMSG_HDRLEN + sizeof(int))
        {
            int err;
            std::memcpy(&err, buf + off + NLMSG_HDRLEN, sizeof err);
            if (err != 0 && out.error == 0)
            {
                out.error = err;
            }
        }
        else if (h.nlmsg_type == ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET))
        {
            const size_t head = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
            if (h.nlmsg_len >= head)
            {
                out.packets.push_back(ReadPacket(buf + off + head, h.nlmsg_len - head));
            }
        }
        off += NLMSG_ALIGN(h.nlmsg_len);
    }
    return out;
}

} // namespace netloop::wifi::nfq
