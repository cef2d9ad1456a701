"""The report's sections about the hosts and the link rather than the loop: the CPU each host
used, the link's outages and loss bursts and how every stream recovered (the loop's streams as
its kind names them, :meth:`kinds.LoopAnalysis.directions`, and the flows), and, on real
machines, what each machine was and how well its clock is known."""
from __future__ import annotations

import math

from . import clocks, degradation, flow_sections, outages
from .kinds import kind_of
from .rendering import Section
from .results import RunAnalysis
from .tables import median_of


def cpu_section(runs: list[RunAnalysis]) -> Section | None:
    """The CPU each host's processes used, per setting and transport (median over the
    repetitions), as a share of one core: where a host runs out of CPU before the link fills."""
    runs = [a for a in runs if a.meta.cpu]
    if not runs:
        return None
    hosts = list(dict.fromkeys(h for a in runs for h in a.meta.cpu))
    swept = len({degradation.setting_of(a) for a in runs}) > 1
    groups: dict[tuple[str, str], list[RunAnalysis]] = {}
    for a in runs:
        groups.setdefault((degradation.setting_of(a), a.transport), []).append(a)
    rows = [([setting] if swept else []) + [transport, len(rs)] +
            [median_of(100 * (a.meta.cpu.get(h) or {}).get("core_share", math.nan) for a in rs) for h in hosts]
            for (setting, transport), rs in groups.items()]
    if swept:
        rank = flow_sections.setting_rank(runs)
        rows.sort(key=lambda r: rank.index(r[0]) if r[0] in rank else len(rank))
    section = Section("CPU of the hosts")
    section.p("CPU time of every process started on a host (its nodes, relays and flows; not the emulator), "
              "as a share of one core over the run, sampled each second: a host near 100 % × its cores, or "
              "near its `cpu` limit, is the bottleneck rather than the link. Per process: `metadata.json` → `cpu`.")
    return section.table((["setting"] if swept else []) + ["transport", "runs"] +
                         [f"{h} [% of a core]" for h in hosts], rows, digits=1)


def _loop_directions(a: RunAnalysis):
    """(name, DirectionStats) of the loop's message streams, for a run whose loop was analysed."""
    return kind_of(a).directions(a)


def _streams(a: RunAnalysis):
    """(name, outage entries) of every stream of a run that an outage touched."""
    for name, d in _loop_directions(a):
        if d.outages:
            yield name, d.outages
    for f in a.flows:
        if f.ok and f.outages:
            yield f"flow {f.label}", f.outages


def _fault_groups(runs: list[RunAnalysis]) -> dict[tuple[str, str, str], list[dict]]:
    """(fault kind, transport, stream) -> the entries of every fault of that kind that touched
    the stream, over the runs (kind: 'outage' or 'loss burst', analysis.outages.kind)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for a in runs:
        for name, entries in _streams(a):
            for e in entries:
                groups.setdefault((outages.kind(e.get("loss")), a.transport, name), []).append(e)
    return groups


def _outage_row(transport: str, name: str, entries: list[dict]) -> list:
    rec = [e["recovery_ms"] for e in entries if e["recovery_ms"] is not None]
    rejoin = [e["rejoin_ms"] for e in entries if e.get("rejoin_ms") is not None]
    return [transport, name, len(entries), median_of(rec) if rec else None, max(rec) if rec else None,
            median_of([e["lost"] for e in entries]), median_of([e["late"] for e in entries]),
            sum(1 for e in entries if e["recovery_ms"] is None), median_of(rejoin) if rejoin else None]


def _burst_row(transport: str, name: str, entries: list[dict]) -> list:
    sent = sum(e.get("sent", 0) for e in entries)
    lost = sum(e["lost"] for e in entries)
    return [transport, name, len(entries), sent, lost, 100 * lost / sent if sent else None]


def outages_section(runs: list[RunAnalysis]) -> Section | None:
    """Runs with link outages or loss bursts (``faults:``): per transport and stream, how long
    after the link came back the first message arrived and what was lost (the Pound paper's
    Table V); for loss bursts, the share of the messages sent during them that was lost."""
    runs = [a for a in runs if a.meta.faults]
    if not runs:
        return None
    groups = _fault_groups(runs)
    windows = runs[0].meta.faults
    bursts = [w for w in windows if w.get("loss") is not None]
    section = Section("Link outages: recovery" if not bursts else
                      "Link outages and loss bursts" if len(bursts) < len(windows) else "Loss bursts")

    def described(w: dict) -> str:
        what = (f"losing {w['loss']:.0%} of what they sent" if w.get("loss") is not None
                else "with their interface down" if w.get("kind") == "interface_down" else "silent")
        return (f"{', '.join(w['hosts'])} {what} {w['planned_end_s'] - w['planned_start_s']:g} s from "
                f"t = {w['planned_start_s']:g} s")
    section.p(f"Each run had {len(windows) - len(bursts)} outage(s) and {len(bursts)} loss burst(s) ("
              + ", ".join(described(w) for w in windows) + "; t from the nodes connecting).")
    if len(bursts) < len(windows):
        down = any(w.get("kind") == "interface_down" for w in windows)
        section.p(("In an interface outage the hosts' interface went down (the kernel dropped its routes, so "
                   "sockets got errors; on Wi-Fi the station left the network) and came back up (routes "
                   "restored; on Wi-Fi the station rejoined: 'station rejoin' is the emulator's time for it). "
                   if down else "")
                  + ("In a drop outage " if down else "In an outage ")
                  + "every packet the silent hosts sent was dropped at their interface. Recovery = "
                  "from the link's return to the first message delivered after it (median over outages and "
                  "repetitions; it includes the transport's back-off, e.g. TCP's retransmission timer); lost = "
                  "sent during an outage and never delivered; late = sent during it and delivered after it "
                  "(queued and retransmitted).")
        section.table(["transport", "stream", "outages", "recovery median [ms]", "recovery max [ms]",
                       "lost (median)", "late (median)", "never recovered", "station rejoin median [ms]"],
                      [_outage_row(t, n, e) for (kind, t, n), e in groups.items() if kind == "outage"], digits=1)
    if bursts:
        section.p("In a loss burst the link's emulator lost each packet the hosts sent with the given probability "
                  "(on Wi-Fi each frame on the air, which the MAC retries up to its retry limit, so a message is "
                  "lost far less often than a frame and arrives later instead). Lost share = messages sent "
                  "during the bursts and never delivered, over all sent during them. UDP loses a message with "
                  "each lost datagram; TCP loses nothing on the network but its retransmission back-off "
                  "delays messages by up to seconds and delivers them in bunches, which ROS's publisher and "
                  "subscriber queues then partly drop (the flow tables' queue drops).")
        section.table(["transport", "stream", "bursts", "sent during bursts", "lost", "lost share [%]"],
                      [_burst_row(t, n, e) for (kind, t, n), e in groups.items() if kind == "loss burst"], digits=1)
    return section


def _clock(m: dict | None) -> str | None:
    """offset ± bound, and the statistical uncertainty where the measurement has one."""
    if not m:
        return None
    stat = f" (stat. ± {m['stat_uncertainty_ms']:.3f})" if m.get("stat_uncertainty_ms") is not None else ""
    return f"{m['offset_ms']:+.3f} ± {m['uncertainty_ms']:.3f}{stat}"


def machines_section(runs: list[RunAnalysis]) -> Section | None:
    """Runs on real machines: what each machine was, its clock against this one before and
    after each run, whether its records came home, and how well each one-way delay is known."""
    runs = [a for a in runs if a.meta.link.get("type") == "real"]
    if not runs:
        return None
    section = Section("Machines and clocks")
    link = runs[0].meta.link
    section.p("The hosts were real machines (" + (link.get("description") or "a hosts file") + "): nothing was "
              "emulated. One-way delays are corrected by each machine's clock offset against the operator's, "
              "measured NTP-style over the same network before and after every run and interpolated over it; "
              "± is the correction's uncertainty, a bound (half the round trip of the best exchanges: it holds "
              "whatever the path's asymmetry); stat. ± is the statistical uncertainty of the offset (the standard "
              "error from the spread of those exchanges): how repeatable it is, blind to a constant asymmetry.")
    described = []
    for host, h in link.get("hosts", {}).items():
        net = ", ".join(f"{k} {h[k]}" for k in ("interface", "mtu", "ssid", "tx_bitrate", "signal") if h.get(k))
        described.append(f"**{host}**: {h.get('address')} ({'this machine' if h.get('local') else h.get('ssh')}"
                         f"{', ' + h['hostname'] if h.get('hostname') else ''}{', ' + h['arch'] if h.get('arch') else ''})"
                         f"{'; ' + net if net else ''}"
                         + "".join(f"; {k} {h[k]}" for k in ("chrony_reference", "chrony_system_time") if h.get(k)))
    section.ul(described + [f"warning: {w}" for w in link.get("warnings", [])])
    rows = []
    for a in runs:
        mlink = a.meta.link
        for host, c in (mlink.get("clocks") or {}).items():
            home = (mlink.get("records_home") or {}).get(host)
            rows.append([a.run_id, host, _clock(c.get("before")), _clock(c.get("after")), c.get("drift_ppm"),
                         "this machine" if home is None else ("yes" if home.get("fetched") else "NO")])
    section.table(["run", "host", "offset before [ms]", "offset after [ms]", "drift [ppm]", "records home"], rows)
    rows = []
    for a in runs:
        for name, d, fallback in _one_way_delays(a):
            ok = clocks.trusted(a.meta, d[1], d[0])
            rows.append([a.run_id, name, d[0], d[1], "corrected D" if ok else fallback])
    if rows:
        fraction = runs[0].meta.link.get("clock_max_uncertainty", 0.1)
        section.p(f"One-way delays (median) and their clock uncertainty. Where the uncertainty is more than "
                  f"{fraction:.0%} of the delay (`clock_max_uncertainty` of the hosts file), the corrected one-way "
                  f"delay is not to be trusted and the round trip, read on one clock, is the measurement: the "
                  f"loop's RTT / 2, or an `echo` flow.")
        section.table(["run", "one-way", "D median [ms]", "± clock [ms]", "use"], rows, digits=3)
    return section


def _one_way_delays(a: RunAnalysis):
    """(name, (median ms, ± ms), fallback) of every clock-corrected one-way delay of a run."""
    for name, d in _loop_directions(a):
        rtt = kind_of(a).round_trip_ms(a)
        fallback = f"RTT / 2 = {rtt / 2:.3g} ms" if rtt is not None and math.isfinite(rtt) else "the RTT"
        if d.clock_uncertainty_ms is not None and d.delay:
            yield name, (d.delay["p50_ms"], d.clock_uncertainty_ms), fallback
    for f in a.flows:
        if f.ok and f.clock_uncertainty_ms is not None and f.delay:
            yield f"flow {f.label}", (f.delay["p50_ms"], f.clock_uncertainty_ms), "an echo flow's round trip"
