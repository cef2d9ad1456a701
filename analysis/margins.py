"""Stability margins of a sampled loop under network delay: gain and phase margin, crossover,
delay margin and jitter margin, in the manner of python-control's ``stability_margins``.

The loop these functions describe is netloop's: a continuous plant ``P(s)`` whose output is
sampled every ``dt`` seconds (time-driven), a discrete controller ``C(z)`` that answers each
sample at once (event-driven), and an actuator that applies each answer when it arrives and
holds it (zero-order hold, the newest sample's answer wins). The delay on the way to the
controller and the delay on the way back therefore add up: the answer to sample k acts
``tau_k`` seconds after sample k, tau_k = (y's delay) + (u's delay) (+ the controller's time),
which is exactly what a run measures as the loop's round trip (RTT). With a constant tau the
sampled loop is linear and time-invariant: the plant's input switches ``tau`` after each
sample, so over one period the held input is the previous answer for ``tau mod dt`` seconds
and the new one for the rest (:func:`sampled_plant`, the modified z-transform; no Padé
approximation).

- :func:`delay_margin`: the largest constant delay that keeps the loop stable. Continuous
  (``dt`` None): the phase margin over the crossover frequency, the smallest over every
  crossover. Sampled: the first delay at which the closed loop's poles leave the unit disc.
- :func:`jitter_margin`: the largest variation ``J`` such that every time-varying delay
  within ``[delay, delay + J]`` keeps the loop stable, by a small-gain argument (sufficient,
  not necessary). Continuous: Kao & Lincoln (2004), "Simple stability criteria for systems
  with time-varying delays", Automatica 40(8): stable if ``|T(iw)| < 1 / (J w)`` for every w,
  T the closed loop with the constant part of the delay. Sampled: the jitter margin of Cervin,
  Lincoln, Eker, Årzén & Wittenmark (2004), "The jitter margin and its application in the
  design of real-time control systems" (RTCSA), for the loop above; the bound is derived for
  netloop's actuator in :func:`jitter_gain` and tends to Kao & Lincoln's as dt -> 0.
- :func:`margins`: all of them for one loop, as a :class:`LoopMargins`.

Delays are in seconds, frequencies in rad/s, phase in degrees, as python-control gives them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import control
import numpy as np
from scipy.linalg import expm

#: frequencies of the sampled loop's frequency responses [rad per sample, 0..pi]: dense where
#: a lightly damped loop peaks, log-spaced towards 0
_THETA = np.unique(np.concatenate([np.pi * np.logspace(-5, 0, 1500), np.linspace(1e-3, np.pi, 1500)]))
#: points per sample period at which the delay's fraction of a period is resolved (jitter margin)
_FRACTIONS = 200


def _ss(sys) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C, D) of a SISO system as arrays."""
    s = control.ss(sys)
    if s.ninputs != 1 or s.noutputs != 1:
        raise ValueError("only single-input single-output loops are supported")
    return (np.atleast_2d(np.asarray(s.A, float)), np.atleast_2d(np.asarray(s.B, float)),
            np.atleast_2d(np.asarray(s.C, float)), np.atleast_2d(np.asarray(s.D, float)))


def open_loop(controller, plant):
    """controller x plant as one system: a state-space system where the controller is proper
    (poles from its matrices, without a transfer function's ill-conditioned polynomials), else
    a transfer function (a continuous PID's derivative)."""
    try:
        return control.ss(controller) * control.ss(plant)
    except ValueError:
        return control.tf(controller) * control.tf(plant)


_MODES: dict[bytes, tuple | None] = {}


def _modes(A, B) -> tuple | None:
    """(eigenvalues, V, V^-1) of M = [[A, B], [0, 0]] when M is diagonalisable with well-
    conditioned eigenvectors (then e^{M t} = V e^{w t} V^-1 costs one product), else None; kept
    per (A, B), as the margins take hundreds of exponentials of one plant."""
    key = A.tobytes() + B.tobytes() + bytes(A.shape[0])
    if key not in _MODES:
        n = A.shape[0]
        M = np.zeros((n + B.shape[1], n + B.shape[1]))
        M[:n, :n], M[:n, n:] = A, B
        w, V = np.linalg.eig(M)
        gaps = np.abs(w[:, None] - w[None, :])[~np.eye(len(w), dtype=bool)]
        scale = max(1.0, float(np.abs(w).max()))
        ok = (gaps.size == 0 or gaps.min() > 1e-6 * scale) and np.linalg.cond(V) < 1e8
        _MODES[key] = (w, V, np.linalg.inv(V)) if ok else None
        if len(_MODES) > 64:
            _MODES.pop(next(iter(_MODES)))
    return _MODES[key]


def hold_response(A, B, t: float) -> tuple[np.ndarray, np.ndarray]:
    """(e^{A t}, integral_0^t e^{A s} ds B): the state's transition over ``t`` seconds and the
    effect of an input held constant over them: the exponential of [[A, B], [0, 0]] t, from its
    modes where it has distinct ones (:func:`_modes`), else scipy's ``expm``."""
    n = A.shape[0]
    modes = _modes(A, B)
    if modes is not None:
        w, V, Vinv = modes
        E = ((V * np.exp(w * t)) @ Vinv).real
    else:
        M = np.zeros((n + B.shape[1], n + B.shape[1]))
        M[:n, :n], M[:n, n:] = A * t, B * t
        E = expm(M)
    return E[:n, :n], E[:n, n:]


def _delayed_hold(A, B, C, dt: float, delay: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Ad, Bd, Cd) of :func:`sampled_plant` as arrays."""
    n = A.shape[0]
    d = int(math.floor(delay / dt + 1e-9))
    f = max(0.0, delay - d * dt)
    late_phi, gamma_new = hold_response(A, B, dt - f)   # the new input, after f
    early_phi, early = hold_response(A, B, f)            # the old input, for f, then carried on
    gamma_old = late_phi @ early
    m = d + 1                                            # buffered inputs u(k-1) .. u(k-d-1)
    Ad, Bd, Cd = np.zeros((n + m, n + m)), np.zeros((n + m, 1)), np.zeros((1, n + m))
    Ad[:n, :n], Cd[0, :n] = late_phi @ early_phi, C[0]
    if d == 0:
        Bd[:n] = gamma_new
    else:
        Ad[:n, n + d - 1:n + d] += gamma_new
    Ad[:n, n + d:n + d + 1] += gamma_old
    Bd[n, 0] = 1.0
    for i in range(1, m):
        Ad[n + i, n + i - 1] = 1.0
    return Ad, Bd, Cd


def _strictly_proper(plant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    A, B, C, D = _ss(plant)
    if np.any(D):
        raise ValueError("the plant must be strictly proper (no direct feedthrough)")
    return A, B, C


def _check_period(dt: float, delay: float) -> None:
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise ValueError(f"sample period must be positive, got {dt!r}")
    if not (math.isfinite(delay) and delay >= 0):
        raise ValueError(f"delay must be finite and >= 0, got {delay!r}")


def sampled_plant(plant, dt: float, delay: float = 0.0) -> control.StateSpace:
    """The continuous ``plant`` sampled every ``dt`` with a zero-order hold whose input changes
    ``delay`` seconds after each sample (``delay`` >= 0, any length).

    With ``delay = d dt + f`` (0 <= f < dt), between samples k and k+1 the plant sees u(k-d-1)
    for f seconds, then u(k-d): x(k+1) = Phi x(k) + Gamma_old u(k-d-1) + Gamma_new u(k-d).
    The past inputs are states of the result (a shift register), so it is an ordinary
    discrete state-space system with sample time ``dt``; ``delay`` 0 is python-control's
    ``c2d(plant, dt, 'zoh')``.
    """
    _check_period(dt, delay)
    return control.ss(*_delayed_hold(*_strictly_proper(plant), dt, delay), np.zeros((1, 1)), dt)


def _closed_loop_matrix(Ap, Bp, Cp, controller) -> np.ndarray:
    """The state matrix of the negative feedback of ``controller`` (A, B, C, D) around the
    strictly proper system (Ap, Bp, Cp): u = C(z) (-y)."""
    Ac, Bc, Cc, Dc = controller
    n, m = Ap.shape[0], Ac.shape[0]
    M = np.zeros((n + m, n + m))
    M[:n, :n] = Ap - Bp @ Dc @ Cp
    M[:n, n:] = Bp @ Cc
    M[n:, :n] = -Bc @ Cp
    M[n:, n:] = Ac
    return M


def closed_loop_poles(plant, controller, dt: float, delay: float = 0.0) -> np.ndarray:
    """Poles of the sampled loop with the constant loop delay ``delay``: negative feedback of
    ``controller`` (discrete, sample time ``dt``) around :func:`sampled_plant`."""
    _check_period(dt, delay)
    Ad, Bd, Cd = _delayed_hold(*_strictly_proper(plant), dt, delay)
    return np.linalg.eigvals(_closed_loop_matrix(Ad, Bd, Cd, _ss(controller)))


def is_stable(plant, controller, dt: float | None = None, delay: float = 0.0) -> bool:
    """Whether the loop with the constant delay ``delay`` is stable: sampled (poles inside the
    unit disc) with ``dt``; continuous (``dt`` None) only for ``delay`` 0 (poles in the left
    half-plane)."""
    if dt is None:
        if delay:
            raise ValueError("a continuous loop's stability under delay: use delay_margin")
        return bool(np.all(np.real(control.feedback(open_loop(controller, plant), 1).poles()) < 0))
    return bool(np.max(np.abs(closed_loop_poles(plant, controller, dt, delay))) < 1.0)


def delay_margin(plant, controller, dt: float | None = None, max_delay: float | None = None) -> float:
    """The largest constant loop delay [s] that keeps the loop stable (0 when it is unstable
    without delay; inf when no delay up to ``max_delay`` destabilises it).

    Continuous (``dt`` None; ``controller`` a continuous system): the smallest phase margin
    over its crossover frequency among all gain crossovers (python-control's
    ``stability_margins(..., returnall=True)``). Sampled (``controller`` with sample time
    ``dt``): the first delay, from 0 in steps of dt/10 (default ``max_delay`` 100 dt), at which
    the sampled loop is unstable, then bisected to 1e-9 s. The sampled margin includes the
    hold: for a slow loop it is about the continuous one less dt/2.
    """
    if dt is None:
        if not is_stable(plant, controller):
            return 0.0
        _gm, pm, _sm, _wpc, wgc, _wms = control.stability_margins(open_loop(controller, plant), returnall=True)
        bounds = [math.radians(p % 360.0) / w for p, w in zip(np.atleast_1d(pm), np.atleast_1d(wgc))
                  if w > 0 and math.isfinite(p)]
        return min(bounds) if bounds else math.inf
    if not is_stable(plant, controller, dt):
        return 0.0
    top, step = (100 * dt if max_delay is None else max_delay), dt / 10
    low = 0.0
    while low < top:
        high = min(low + step, top)
        if not is_stable(plant, controller, dt, high):
            while high - low > 1e-9:
                mid = 0.5 * (low + high)
                low, high = (mid, high) if is_stable(plant, controller, dt, mid) else (low, mid)
            return low
        low = high
    return math.inf


def _response(A, B, C, D, z: np.ndarray) -> np.ndarray:
    """C (zI - A)^-1 B + D of a SISO state-space system at the complex points ``z``."""
    n = A.shape[0]
    if n == 0:
        return np.full(z.shape, complex(D[0, 0]))
    M = z[:, None, None] * np.eye(n)[None] - A[None]
    return (np.linalg.solve(M, np.broadcast_to(B, (len(z),) + B.shape))[:, :, 0] @ C[0]) + D[0, 0]


@dataclass
class _JitterParts:
    """What the jitter criterion of one loop needs at every constant delay, computed once:
    the frequency grid, the controller's response and |P_f(e^{i theta})| for the fractions
    f = j dt / _FRACTIONS of a period (rows: theta, columns: f)."""

    plant: tuple
    controller: tuple
    dt: float
    z: np.ndarray
    Cz: np.ndarray
    rows: np.ndarray       # C (zI - Phi)^-1 per z
    shifted: np.ndarray


def _jitter_parts(plant, controller, dt: float, theta: np.ndarray | None = None) -> _JitterParts:
    A, B, C = _strictly_proper(plant)
    theta = _THETA if theta is None else np.asarray(theta, float)
    z = np.exp(1j * theta)
    n = A.shape[0]
    Phi, _ = hold_response(A, B, dt)
    # C (zI - Phi)^-1 for every z (rows), times e^{A (dt - f)} B for every fraction f
    rows = np.linalg.solve(np.transpose(z[:, None, None] * np.eye(n)[None] - Phi[None], (0, 2, 1)),
                           np.broadcast_to(C[0], (len(z), n)))
    step, _ = hold_response(A, B, dt / _FRACTIONS)
    inputs, v = np.zeros((n, _FRACTIONS)), B[:, 0].copy()
    for j in range(_FRACTIONS - 1, -1, -1):       # e^{A (dt - j dt/F)} B, from j = F - 1 down
        v = step @ v
        inputs[:, j] = v
    return _JitterParts((A, B, C), _ss(controller), dt, z, _response(*_ss(controller), z), rows,
                        np.abs(rows @ inputs))


def _jitter_gain(parts: _JitterParts, delay: float) -> np.ndarray:
    """g over the fractions of a period, starting at the fraction of ``delay`` (:func:`jitter_gain`)."""
    A, B, _C = parts.plant
    d = int(math.floor(delay / parts.dt + 1e-9))
    f = max(0.0, delay - d * parts.dt)
    late_phi, gamma_new = hold_response(A, B, parts.dt - f)
    _, early = hold_response(A, B, f)
    z = parts.z   # P_delay(z) = z^-d C (zI - Phi)^-1 (Gamma_new + Gamma_old / z), as sampled_plant
    Pz = z ** -d * (parts.rows @ gamma_new[:, 0] + (parts.rows @ (late_phi @ early)[:, 0]) / z)
    H = np.abs((1 - 1 / parts.z) * parts.Cz / (1 + Pz * parts.Cz))
    g = np.max(H[:, None] * parts.shifted, axis=0)
    start = int(round(math.fmod(delay, parts.dt) / parts.dt * _FRACTIONS)) % _FRACTIONS
    return np.roll(g, -start)


def jitter_gain(plant, controller, dt: float, delay: float = 0.0,
                theta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The jitter criterion's gain per instant of extra delay: (sigma, g(delay + sigma)) over
    one sample period (g repeats with period ``dt``) [1/s]; :func:`jitter_margin` integrates it.

    Derivation (the small-gain argument of Cervin et al. 2004 for netloop's actuator). Let
    every sample's delay lie in [delay, delay + J] and the newest answer win. Then the applied
    input is the nominal held signal (every delay equal to ``delay``) with each switch moved
    later by at most J: u(t) = u_nom(t) + w(t), where w is, after the switch to v_k = u(k) -
    u(k-1), the pulse -v_k for a part of [s_k, s_k + J] (s_k = k dt + delay). The effect of w
    on the samples is e = -integral_0^J P_sigma (M_sigma v) d sigma, with P_sigma the plant's
    sampled impulse response shifted by delay + sigma (P_sigma(z) = sum_n p(n dt - delay -
    sigma) z^-n) and M_sigma a mask of 0s and 1s (gain <= 1); the nominal loop turns e back into
    v = -(1 - z^-1) C (1 + P_zoh C)^-1 e =: -H e. So the loop v -> v has gain at most
    integral_0^J g(delay + sigma) d sigma with g = sup_theta |H(e^{i theta}) P_sigma(e^{i theta})|,
    and the loop is stable for every such delay sequence when the nominal loop is and that
    integral stays below 1 (the small-gain theorem). |P_sigma| depends only on the fraction of
    a period in delay + sigma. ``theta``: the grid of the supremum [rad per sample, 0..pi]
    (default 3000 points, log-spaced towards 0 and dense over the band).
    """
    _check_period(dt, delay)
    sigma = np.arange(_FRACTIONS) * dt / _FRACTIONS
    return sigma, _jitter_gain(_jitter_parts(plant, controller, dt, theta), delay)


def _integrate_to_one(g: np.ndarray, ds: float, cap: float) -> float:
    """The first J at which the integral of the periodic ``g`` (steps of ``ds``) reaches 1,
    at most ``cap``."""
    per_period = float(np.sum(g) * ds)
    if per_period <= 0:
        return cap
    periods = max(0, math.floor(1.0 / per_period) - 1)
    if periods * len(g) * ds >= cap:
        return cap
    total = periods * per_period + np.cumsum(np.tile(g, 2) * ds)
    i = min(int(np.searchsorted(total, 1.0)), len(total) - 1)
    before = total[i - 1] if i else periods * per_period
    J = (periods * len(g) + i) * ds + (1.0 - before) / g[i % len(g)]
    return min(J, cap)


def jitter_margin(plant, controller, dt: float | None = None, delay: float = 0.0,
                  max_jitter: float | None = None) -> float:
    """The largest J [s] such that the loop is stable for every time-varying delay within
    ``[delay, delay + J]`` by the small-gain criterion (module docstring); 0 when the loop with
    the constant ``delay`` is unstable; capped at ``max_jitter`` (default 100 dt, or 100 s).

    Continuous (``dt`` None, ``controller`` continuous): Kao & Lincoln (2004),
    J = 1 / max_w (w |T(iw)|), T = L e^{-iw delay} / (1 + L e^{-iw delay}), L = C P.
    Sampled: the first J at which the integral of :func:`jitter_gain` over [0, J] reaches 1.
    A sufficient condition: a loop may stay stable with more jitter, never with less than this
    and every delay inside the range.
    """
    if dt is None:
        cap = 100.0 if max_jitter is None else max_jitter
        if delay >= delay_margin(plant, controller):
            return 0.0
        w = np.logspace(-4, 5, 20000)
        loop = control.tf(open_loop(controller, plant))
        num, den = np.asarray(loop.num[0][0], float), np.asarray(loop.den[0][0], float)
        Lw = np.polyval(num, 1j * w) / np.polyval(den, 1j * w) * np.exp(-1j * w * delay)
        peak = float(np.max(w * np.abs(Lw / (1 + Lw))))
        return min(1.0 / peak, cap) if peak > 0 else cap
    return float(jitter_boundary(plant, controller, dt, [delay], max_jitter)[0])


def jitter_boundary(plant, controller, dt: float, delays, max_jitter: float | None = None) -> np.ndarray:
    """The jitter margin (sampled, :func:`jitter_margin`) at each constant part in ``delays``
    [s]: the boundary of the (delay, jitter) plane below which the loop is proven stable."""
    cap = 100 * dt if max_jitter is None else max_jitter
    parts = None
    out = []
    for delay in map(float, delays):
        _check_period(dt, delay)
        if not is_stable(plant, controller, dt, delay):
            out.append(0.0)
            continue
        parts = parts or _jitter_parts(plant, controller, dt)
        out.append(_integrate_to_one(_jitter_gain(parts, delay), dt / _FRACTIONS, cap))
    return np.array(out)


@dataclass
class LoopMargins:
    """The margins of one loop (:func:`margins`); ``sampled_*`` with the hold and the sample
    period, ``continuous_*`` of the same plant and controller as if it were continuous."""

    dt: float
    gain_margin: float                 # sampled loop, as a factor (inf: none)
    phase_margin_deg: float            # sampled loop
    crossover_rad_s: float             # sampled loop's gain crossover
    delay_margin_s: float              # sampled loop
    jitter_margin_s: float             # sampled loop, at no constant delay
    continuous_gain_margin: float
    continuous_phase_margin_deg: float
    continuous_crossover_rad_s: float
    continuous_delay_margin_s: float
    continuous_jitter_margin_s: float
    boundary_delay_s: list[float] = field(default_factory=list)    # the jitter margin's constant parts
    boundary_jitter_s: list[float] = field(default_factory=list)   # and the jitter margin at each
    continuous_boundary_delay_s: list[float] = field(default_factory=list)   # the same, continuous
    continuous_boundary_jitter_s: list[float] = field(default_factory=list)

    def jitter_at(self, delay: float) -> float:
        """The jitter margin at the constant part ``delay`` [s], interpolated on the boundary
        (0 at and beyond the delay margin)."""
        if not self.boundary_delay_s or delay >= self.delay_margin_s:
            return 0.0
        return float(np.interp(max(delay, 0.0), self.boundary_delay_s, self.boundary_jitter_s))


def _classic(loop) -> tuple[float, float, float]:
    """(gain margin, phase margin [deg], gain crossover [rad/s]) of an open loop (python-control)."""
    gm, pm, _sm, _wpc, wgc, _wms = control.stability_margins(loop)
    return float(gm), float(pm), float(wgc)


def margins(plant, controller, dt: float, continuous_controller=None, boundary_points: int = 25) -> LoopMargins:
    """Every margin of the loop of ``plant`` (continuous) and ``controller`` (discrete, sample
    time ``dt``), and the jitter margin's boundary at ``boundary_points`` constant parts from
    0 to the delay margin. ``continuous_controller`` (default: the discrete one's gain at z =
    1 when it is static) gives the continuous reference margins."""
    sampled = open_loop(controller, sampled_plant(plant, dt))
    gm, pm, wc = _classic(sampled)
    dm = delay_margin(plant, controller, dt)
    cc = continuous_controller
    if cc is None:
        cc = control.tf([float(np.real(control.evalfr(controller, 1.0)))], [1])
    cgm, cpm, cwc = _classic(open_loop(cc, plant))
    out = LoopMargins(dt=dt, gain_margin=gm, phase_margin_deg=pm, crossover_rad_s=wc, delay_margin_s=dm,
                      jitter_margin_s=jitter_margin(plant, controller, dt), continuous_gain_margin=cgm,
                      continuous_phase_margin_deg=cpm, continuous_crossover_rad_s=cwc,
                      continuous_delay_margin_s=delay_margin(plant, cc),
                      continuous_jitter_margin_s=jitter_margin(plant, cc))
    if math.isfinite(dm) and dm > 0:
        delays = boundary_delays(dm, boundary_points)
        out.boundary_delay_s = delays.tolist()
        out.boundary_jitter_s = [*jitter_boundary(plant, controller, dt, delays[:-1]).tolist(), 0.0]
    cdm = out.continuous_delay_margin_s
    if math.isfinite(cdm) and cdm > 0:
        delays = boundary_delays(cdm, boundary_points)
        out.continuous_boundary_delay_s = delays.tolist()
        out.continuous_boundary_jitter_s = [*(jitter_margin(plant, cc, None, float(d)) for d in delays[:-1]), 0.0]
    return out


def boundary_delays(delay_margin_s: float, points: int) -> np.ndarray:
    """The constant parts at which the jitter margin's boundary is drawn: 0, then from 1/1000 of
    the delay margin to the margin, evenly on a log scale (the boundary is read on log axes),
    and four more in its last half, where the margin falls to 0."""
    n = max(points, 6)
    logs = np.geomspace(delay_margin_s / 1000, delay_margin_s, n - 5)
    return np.unique(np.concatenate([[0.0], logs, delay_margin_s * np.array([0.6, 0.75, 0.88, 0.96])]))
