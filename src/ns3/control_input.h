// The control input of netloop_wifi_link: lines on its standard input that set loss bursts
// (`loss <k> <p>`: frames node k sends are lost with probability p; `loss all <p>`: every
// frame; p = 0 ends the burst) or switch a station off and on (`down <k>`: node k's host
// brings its interface down, the station leaves the network; `up <k>`: it rejoins; `open <k>`:
// the host's interface is up again; see station_presence.h). No ns-3 here: the link monitor (link_monitor.h) reads the
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

/// A station switched by the control input: `down <k>` (its host's interface goes down),
/// `up <k>` (the station returns, before the host's interface is up) or `open <k>` (the host's
/// interface is up: what the station receives reaches it again).
struct StationSwitch
{
    enum Action
    {
        kNone, // the line is not a station line
        kDown,
        kUp,
        kOpen
    };

    long node = -1;
    Action action = kNone;
};

/// Reads a `down <k>` / `up <k>` / `open <k>` line for a link of `nodes` tapped stations into
/// `station`; returns an error text (a bad node), empty otherwise. Any other verb leaves the
/// action kNone.
std::string ParseStationLine(const std::string& line, size_t nodes, StationSwitch& station);

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
