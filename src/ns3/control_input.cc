#include "control_input.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace netloop::wifi
{

double
LossBursts::ForSender(long sender) const
{
    double p = all;
    if (sender >= 0 && static_cast<size_t>(sender) < perNode.size())
    {
        p = std::max(p, perNode[sender]);
    }
    return p;
}

std::string
ApplyControl(const std::string& line, LossBursts& bursts)
{
    std::istringstream in(line);
    std::string verb, target;
    double p = -1;
    if (!(in >> verb >> target >> p) || verb != "loss" || p < 0 || p > 1)
    {
        return "bad control line (expected: loss <node index>|all <probability 0..1>, or down, up or "
               "open <node index>)";
    }
    if (target == "all")
    {
        bursts.all = p;
        return "";
    }
    char* end = nullptr;
    unsigned long k = std::strtoul(target.c_str(), &end, 10);
    if (*end != '\0' || k >= bursts.perNode.size())
    {
        return "no node " + target;
    }
    bursts.perNode[k] = p;
    return "";
}

std::string
ParseStationLine(const std::string& line, size_t nodes, StationSwitch& station)
{
    station = StationSwitch();
    std::istringstream in(line);
    std::string verb, target, rest;
    if (!(in >> verb) || (verb != "down" && verb != "up" && verb != "open"))
    {
        return "";
    }
    if (!(in >> target) || (in >> rest))
    {
        return "bad control line (expected: " + verb + " <node index>)";
    }
    char* end = nullptr;
    unsigned long k = std::strtoul(target.c_str(), &end, 10);
    if (target.empty() || *end != '\0' || k >= nodes)
    {
        return "no node " + target;
    }
    station.node = static_cast<long>(k);
    station.action = verb == "down" ? StationSwitch::kDown
                     : verb == "up" ? StationSwitch::kUp
                                    : StationSwitch::kOpen;
    return "";
}

bool
LineBuffer::Next(std::string& line)
{
    size_t nl = m_pending.find('\n');
    if (nl == std::string::npos)
    {
        return false;
    }
    line = m_pending.substr(0, nl);
    m_pending.erase(0, nl + 1);
    return true;
}

} // namespace netloop::wifi
