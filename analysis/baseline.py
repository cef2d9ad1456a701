"""The RLC loop computed offline: the local (zero-delay) baseline and delayed variants.

The local baseline is the loop as if plant and controller were one program: the circuit
discretised with python-control (``c2d(..., 'zoh')`` at the sample period T) and the
control law u(k) = K (r - y(k)) (+ the optional I and D terms) applied at the sampling
instant. :func:`simulate_loop` generalises it to any per-sample actuation delay and to lost
actuations, with the same exact ZOH solution over each piece of an interval that the
``rlc_plant`` node uses, so a networked run can be replayed from its measured delays.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import control
import numpy as np
from scipy.linalg import expm


def rlc_state_space(R: float = 1.0, L: float = 0.1, C: float = 0.1) -> control.StateSpace:
    """Series RLC circuit: state [Vc, i], input source voltage u, output y = Vc."""
    A = [[0.0, 1.0 / C], [-1.0 / L, -R / L]]
    B = [[0.0], [1.0 / L]]
    return control.ss(A, B, [[1.0, 0.0]], [[0.0]])


def rlc_zoh(R: float, L: float, C: float, T: float) -> control.StateSpace:
    """The circuit discretised by zero-order hold at period T (python-control)."""
    return control.c2d(rlc_state_space(R, L, C), T, "zoh")


@dataclass(frozen=True)
class ControlLaw:
    """u(k) = K e(k) + Ki T sum_{j<=k} e(j) + Kd (e(k) - e(k-1)) / T, e = r - y (as loop_controller)."""

    K: float = 1.0
    Ki: float = 0.0
    Kd: float = 0.0
    reference: float = 1.0
    T: float = 0.02
    schedule: tuple = ()      # (k, level): from sample k the reference is level (netloop.reference)

    def reference_at(self, k: int) -> float:
        """r(k): the schedule's level at sample k, else the constant reference."""
        r = self.reference
        for step, level in self.schedule:
            if step > k:
                break
            r = level
        return r

    def sequence(self):
        """A generator: send y(k), receive u(k)."""
        integral, e_prev, u, k = 0.0, None, None, 0
        while True:
            y = yield u
            e = self.reference_at(k) - y
            k += 1
            integral += e * self.T
            derivative = 0.0 if e_prev is None else (e - e_prev) / self.T
            e_prev = e
            u = self.K * e + self.Ki * integral + self.Kd * derivative


def law_from_config(loop: dict) -> ControlLaw:
    """The control law of an experiment's ``loop`` mapping; its reference schedule is the
    run's (``reference_schedule``, attached by :func:`analysis.repeated_steps.attach_schedule`)
    when it has one."""
    ctl, plant = loop["controller"], loop["plant"]
    schedule = tuple((int(k), float(v)) for k, v in loop.get("reference_schedule") or ())
    return ControlLaw(ctl["K"], ctl["Ki"], ctl["Kd"], ctl["reference"], plant["period"], schedule)


def controller_tf(loop: dict) -> control.TransferFunction:
    """The control law of an experiment's ``loop`` mapping as a discrete transfer function from
    e = r - y to u, sample time T: C(z) = K + Ki T z / (z - 1) + Kd (z - 1) / (T z) (the I and D
    terms only where their gains are not 0, so no pole cancels a zero)."""
    ctl, T = loop["controller"], loop["plant"]["period"]
    out = control.tf([float(ctl["K"])], [1.0], T)
    if ctl["Ki"]:
        out = out + control.tf([ctl["Ki"] * T, 0.0], [1.0, -1.0], T)
    if ctl["Kd"]:
        out = out + control.tf([ctl["Kd"] / T, -ctl["Kd"] / T], [1.0, 0.0], T)
    return out


def controller_continuous(loop: dict) -> control.TransferFunction:
    """The continuous counterpart of :func:`controller_tf`, K + Ki / s + Kd s (improper with a
    D term): the loop as if it were not sampled, for the continuous reference margins."""
    ctl = loop["controller"]
    out = control.tf([float(ctl["K"])], [1.0])
    if ctl["Ki"]:
        out = out + control.tf([float(ctl["Ki"])], [1.0, 0.0])
    if ctl["Kd"]:
        out = out + control.tf([float(ctl["Kd"]), 0.0], [1.0])
    return out


def reference_series(loop: dict, samples: int) -> np.ndarray:
    """r(k) for k = 0 .. samples - 1 of an experiment's ``loop`` mapping."""
    law = law_from_config(loop)
    return np.array([law.reference_at(k) for k in range(samples)])


@dataclass
class LoopResponse:
    t: np.ndarray   # sample times [s] from the first sample
    y: np.ndarray   # y(k) = Vc at the samples [V]
    u: np.ndarray   # u(k) computed from y(k) [V] (NaN where lost)


def local_baseline(loop: dict, samples: int | None = None) -> LoopResponse:
    """The zero-delay loop for an experiment's ``loop`` section, from python-control's c2d."""
    plant = loop["plant"]
    n = samples or loop["samples"]
    sysd = rlc_zoh(plant["R"], plant["L"], plant["C"], plant["period"])
    Phi, Gamma, Cy = np.asarray(sysd.A), np.asarray(sysd.B).ravel(), np.asarray(sysd.C).ravel()
    law = law_from_config(loop).sequence()
    next(law)
    x = np.array(plant["initial_state"], dtype=float)
    y, u = np.empty(n), np.empty(n)
    for k in range(n):
        y[k] = Cy @ x
        u[k] = law.send(y[k])
        x = Phi @ x + Gamma * u[k]
    return LoopResponse(np.arange(n) * plant["period"], y, u)


class _ExactRlc:
    """Exact ZOH stepping over arbitrary intervals (the same solution as rlc_plant)."""

    def __init__(self, R: float, L: float, C: float, x0):
        self.A = np.array([[0.0, 1.0 / C], [-1.0 / L, -R / L]])
        self.B = np.array([0.0, 1.0 / L])
        self.x = np.array(x0, dtype=float)
        self._cache: dict[float, np.ndarray] = {}   # h -> e^{Mh}: intervals repeat (k T, fixed delays)
        self._modes = _modes(self.A, self.B)

    def advance(self, h: float, u: float) -> None:
        if h <= 0:
            return
        E = self._cache.get(h)
        if E is None:
            E = _zoh_step(self.A, self.B, h, self._modes)
            if len(self._cache) < 4096:
                self._cache[h] = E
        self.x = E[:2, :2] @ self.x + E[:2, 2] * u


def _modes(A: np.ndarray, B: np.ndarray):
    """(eigenvalues, V, V^-1, V^-1 B) of ``A`` when it has two distinct, non-zero eigenvalues
    and well-conditioned eigenvectors (every RLC plant but the critically damped ones), else
    None: :func:`_zoh_step` then takes scipy's expm."""
    w, V = np.linalg.eig(A)
    scale = max(1.0, float(np.abs(w).max()))
    if abs(w[0] - w[1]) < 1e-6 * scale or np.abs(w).min() < 1e-9 * scale or np.linalg.cond(V) > 1e6:
        return None
    Vinv = np.linalg.inv(V)
    return w, V, Vinv, Vinv @ B


def _zoh_step(A: np.ndarray, B: np.ndarray, h: float, modes) -> np.ndarray:
    """e^{Mh} of M = [[A, B], [0, 0]]: the state's transition over ``h`` (top left) and the
    held input's effect (top right column), from A's modes (e^{Ah} = V e^{wh} V^-1 and
    A^-1 (e^{Ah} - I) B), as scipy's expm of M gives them to ~1e-15 and ~100 times faster."""
    if modes is None:
        M = np.zeros((3, 3))
        M[:2, :2], M[:2, 2] = A * h, B * h
        return expm(M)
    w, V, Vinv, VinvB = modes
    ew = np.exp(w * h)
    E = np.zeros((3, 3))
    E[:2, :2] = ((V * ew) @ Vinv).real
    E[:2, 2] = (V @ ((ew - 1.0) / w * VinvB)).real
    E[2, 2] = 1.0
    return E


def simulate_loop(loop: dict, delays, lost=None, sample_times=None, seqs=None) -> LoopResponse:
    """The loop with actuation u(k) applied ``delays[k]`` seconds after sample k (sensor to
    controller to actuator), or never where ``lost[k]``. Actuations arriving out of order
    are dropped when older than the last applied one, as rlc_plant does.

    ``sample_times`` (default k T) lets a replay use the real sampling instants. ``seqs``
    (default k) is the sequence number of the actuation answering sample k, which decides
    "older" as in rlc_plant (the controller numbers its u in the order it received the y).
    """
    plant = loop["plant"]
    delays = np.asarray(delays, dtype=float)
    n = len(delays)
    lost = np.zeros(n, bool) if lost is None else np.asarray(lost, bool)
    times = np.arange(n) * plant["period"] if sample_times is None else np.asarray(sample_times, float)
    order = np.arange(n) if seqs is None else np.asarray(seqs, dtype=np.int64)
    rlc = _ExactRlc(plant["R"], plant["L"], plant["C"], plant["initial_state"])
    law = law_from_config(loop).sequence()
    next(law)
    now, u_held, last_seq = times[0], 0.0, -1
    pending: list[tuple[float, int, float]] = []  # (arrival time, seq, u)
    y, u = np.empty(n), np.full(n, np.nan)

    def apply_until(t_end: float) -> None:
        nonlocal now, u_held, last_seq
        while pending and pending[0][0] <= t_end:
            t_arr, seq, value = heapq.heappop(pending)
            if seq <= last_seq:
                continue
            rlc.advance(t_arr - now, u_held)
            now, u_held, last_seq = max(now, t_arr), value, seq
        rlc.advance(t_end - now, u_held)
        now = max(now, t_end)

    for k in range(n):
        apply_until(times[k])
        y[k] = rlc.x[0]
        value = law.send(y[k])
        if not lost[k]:
            u[k] = value
            heapq.heappush(pending, (times[k] + delays[k], int(order[k]), value))
    return LoopResponse(times - times[0], y, u)
