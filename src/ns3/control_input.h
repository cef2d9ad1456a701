// The control input of netloop_wifi_link: lines on its standard input that set loss bursts
// (`loss <k> <p>`: frames node k sends are lost with probability p; `loss all <p>`: every
// frame; p = 0 ends the burst). No ns-3 here: the link monitor (link_monitor.h) reads the
// input, the channel's error model (wifi_channel.h) applies the bursts; unit-tested in
// test/cpp/test_wifi_link.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace netloop::wifi
{

/// The loss bursts under way.
struct LossBursts
{
    std::vector<double> perNode; // by node index (--taps order, then the access point)
    double all = 0.0;

    /// The probability that a data frame sent by node `sender` is lost (-1: a station that
    /// is not one of the nodes, e.g. a background station: only `all` applies).
    double ForSender(long sender) const;
};

/// Applies one control line to `bursts`; returns an error text, empty when applied.
std::string ApplyControl(const std::string& line, LossBursts& bursts);

/// Bytes as they arrive, handed back as whole lines (without the newline).
class LineBuffer
{
  public:
    void Append(const char* data, size_t n)
    {
        m_pending.append(data, n);
    }

    /// The next complete line, if there is one.
    bool Next(std::string& line);

  private:
    std::string m_pending;
};

} // namespace netloop::wifi
