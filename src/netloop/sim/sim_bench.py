"""Benchmarks of the embedded simulator (no ROS): ``run_all() -> dict``.

* ``physics_step_ms``: median wall time of one physics step (car driving, no sensors);
* ``camera_frame_ms``: median cost of one camera frame (TinyRenderer, default 320x240), and
  ``jpeg_encode_ms`` for its JPEG (what ``camera/image_raw/compressed`` adds);
* ``scan_ms``: median cost of one 360-ray LIDAR scan;
* ``rtf``: real-time factor of :class:`RealTimeLoop` with the camera (15 fps) and the LIDAR
  (10 Hz) on, paced to the wall clock (1.0 = keeps up; mean and minimum over 1 s windows),
  with ``max_lag_ms``-style drops counted in ``dropped_s``;
* ``free_running_speedup``: simulated seconds per wall second with the same sensors when not
  paced (how much headroom there is);
* ``cpu_share``: process CPU time / wall time during the paced run (one core = 1.0).

Medians over a few hundred calls; the whole run takes about 15 s of one core.
"""
from __future__ import annotations

import os
import statistics
import time

from .simulation import RealTimeLoop, Simulation


def _median_ms(fn, n: int) -> float:
    costs = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        costs.append(time.perf_counter() - t0)
    return round(1e3 * statistics.median(costs), 3)


def run_all(world: str = "arena", width: int = 320, height: int = 240, camera_rate: float = 15.0,
            scan_rate: float = 10.0, physics_rate: float = 1000.0, paced_seconds: float = 6.0,
            free_seconds: float = 3.0) -> dict:
    from netloop.car_driver.hardware import encode_jpeg  # noqa: PLC0415

    cfg = {"world": world, "width": width, "height": height, "camera_rate": camera_rate,
           "scan_rate": scan_rate, "physics_rate": physics_rate}
    out: dict = {"world": world, "image": f"{width}x{height}", "camera_rate": camera_rate,
                 "scan_rate": scan_rate, "physics_rate": physics_rate}
    with Simulation(cfg) as sim:
        sim.step(200)

        def drive_step():
            sim.command(0.3, 0.3)
            sim.step()

        out["physics_step_ms"] = _median_ms(drive_step, 2000)
        out["camera_frame_ms"] = _median_ms(sim.render_camera, 40)
        frame = sim.render_camera()
        out["jpeg_encode_ms"] = _median_ms(lambda: encode_jpeg(frame[:, :, ::-1], 75), 40)
        out["scan_ms"] = _median_ms(sim.scan, 200)

        def sensors(loop):
            loop.add("camera", sim.camera_rate, lambda: encode_jpeg(sim.render_camera()[:, :, ::-1], 75))
            loop.add("scan", sim.scan_rate, sim.scan)
            loop.add("drive", 20.0, lambda: sim.command(0.3, 0.3))

        loop = RealTimeLoop(sim, realtime=True, max_lag=0.1)
        sensors(loop)
        wall0, cpu0 = time.monotonic(), time.process_time()
        loop.run(paced_seconds)
        wall = time.monotonic() - wall0
        out["cpu_share"] = round((time.process_time() - cpu0) / wall, 3)
        hist = loop.rtf_history or [paced_seconds / wall]
        out["rtf"] = round(paced_seconds / wall, 4)
        out["rtf_window_min"] = round(min(hist), 4)
        out["dropped_s"] = round(loop.dropped, 4)
        out["frames"] = next(t.runs for t in loop.tasks if t.name == "camera")
        out["scans"] = next(t.runs for t in loop.tasks if t.name == "scan")

        free = RealTimeLoop(sim, realtime=False)
        sensors(free)
        t0 = time.monotonic()
        free.run(free_seconds)
        out["free_running_speedup"] = round(free_seconds / (time.monotonic() - t0), 2)
    out["cores"] = os.cpu_count()
    return out


if __name__ == "__main__":  # python -m netloop.sim.sim_bench
    import json
    print(json.dumps(run_all(), indent=2))
