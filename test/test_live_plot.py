"""`netloop plot --live` against a real running loop (real roscore, real nodes), in a real X
server (Xvfb): the window is there, and a screenshot of the display shows the plot drawn with
the loop's data. Also `netloop plot RUN_DIR` and the rqt perspective file."""
from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from waiting import recorded, wait_until

from netloop import paths, rosenv
from netloop.experiment import validate_experiment
from netloop.loops.rlc import rlc_parameters
from netloop.master import wait_for

pytestmark = pytest.mark.integration

LOOP = validate_experiment({}, name="t").loop
PYTHON = str(paths.REPO / ".venv" / "bin" / "python")


def free_display() -> int:
    for n in range(93, 200):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number")


@pytest.fixture
def xvfb(tmp_path):
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb not installed (Debian package xvfb)")
    n = free_display()
    proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=open(tmp_path / "xvfb.log", "wb"), stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: Path(f"/tmp/.X11-unix/X{n}").exists() or proc.poll() is not None, 10)
        assert proc.poll() is None, (tmp_path / "xvfb.log").read_text()
        yield f":{n}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_loop(master, tmp_path, samples):
    master.set_params(rlc_parameters(LOOP), "/rlc")
    master.set_params({"transport": "tcp_nodelay", "record_path": str(tmp_path / "controller.csv")}, "/controller")
    master.set_params({"transport": "tcp_nodelay", "samples": samples, "warmup": 0.0,
                       "record_path": str(tmp_path / "plant.csv")}, "/plant")
    env = rosenv.node_env(master.uri, "127.0.0.1", tmp_path / "ros")
    master.group.start("controller", [str(paths.node_binary("loop_controller")), "__name:=controller"], env=env)
    return master.group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"], env=env)


def test_live_plot_window_shows_the_running_loop(roscore, xvfb, tmp_path):
    if shutil.which("import") is None:
        pytest.fail("ImageMagick's import not installed (Debian package imagemagick)")
    env = dict(rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros"), DISPLAY=xvfb)
    saved = tmp_path / "live.png"
    viewer = subprocess.Popen([PYTHON, "-m", "netloop", "plot", "--live", "--seconds", "9", "--window", "4",
                               "--save", str(saved)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # the viewer subscribes first, then the loop starts: it sees the step from the start
        assert wait_for(lambda: _viewer_subscribed(roscore) or viewer.poll() is not None, 30)
        assert viewer.poll() is None, viewer.communicate()[0].decode()
        start_loop(roscore, tmp_path, samples=500)   # 10 s at 50 Hz
        # the screenshot once the plant has sent 4 s of samples: the plot's window is full
        wait_until(lambda: recorded(tmp_path / "plant.csv", "tx", "y") >= 200, 20, "the plant to send 200 samples")
        tree = subprocess.run(["xwininfo", "-root", "-tree", "-display", xvfb], capture_output=True, text=True).stdout
        assert "netloop live" in tree, tree
        shot = tmp_path / "screen.png"
        subprocess.run(["import", "-display", xvfb, "-window", "root", str(shot)], check=True, timeout=30)
        out = viewer.communicate(timeout=30)[0].decode()
    finally:
        if viewer.poll() is None:
            viewer.kill()
            viewer.wait()
    assert viewer.returncode == 0, out
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape == (768, 1024, 3)
    not_black = np.any(img > 30, axis=2).mean()
    white = np.all(img > 245, axis=2).mean()            # the figure and axes background
    dark = np.all(img < 80, axis=2) & np.any(img > 0, axis=2)
    assert not_black > 0.3, f"screen mostly empty ({not_black:.2f} non-black)"
    assert white > 0.2, f"no plot window ({white:.2f} white)"
    assert dark.sum() > 2000 or np.all(img < 80, axis=2).sum() > 2000   # axes, ticks, text
    for name, rgb in (("y", (0x00, 0x72, 0xB2)), ("u", (0xD5, 0x5E, 0x00))):
        near = np.all(np.abs(img - np.array(rgb)) < 40, axis=2).sum()
        assert near > 150, f"the {name} trace is not drawn ({near} pixels of its colour)"
    # the viewer got the loop's messages and says so; its saved view exists
    received = [line for line in out.splitlines() if "received" in line][-1]
    n_y, n_u = (int(w) for w in received.split("received ")[1].replace(" y and", "").split(" u")[0].split())
    assert n_y > 150 and n_u > 150, out
    assert saved.stat().st_size > 20_000


def _viewer_subscribed(master) -> bool:
    """Both loop topics have the viewer (node netloop_live_plot_*) among their subscribers."""
    try:
        code, _, state = master.rpc(master.uri, "getSystemState")
    except Exception:
        return False
    subs = {topic: nodes for topic, nodes in state[1]}
    return all(any(n.startswith("/netloop_live_plot") for n in subs.get(t, [])) for t in ("/y", "/u"))


def test_plot_of_a_recorded_run(tmp_path):
    from netloop.analysis import synthetic
    from netloop.experiment import expand, for_cell
    cfg = validate_experiment({"transport": "udp", "loop": {"samples": 60}}, name="p")
    run = tmp_path / "udp-r0"
    synthetic.write_run(run, for_cell(cfg, expand(cfg)[0]).metadata(), np.full(60, 0.004), np.full(60, 0.006))
    env = dict(rosenv.base_env())
    env.pop("DISPLAY", None)
    res = subprocess.run([PYTHON, "-m", "netloop", "plot", str(run)], env=env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert (run / "figures" / "loop_signals.png").stat().st_size > 20_000
    res = subprocess.run([PYTHON, "-m", "netloop", "plot"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--live" in res.stderr
    res = subprocess.run([PYTHON, "-m", "netloop", "plot", "--live", "--seconds", "1"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and "no display" in res.stderr


def test_rqt_perspective_plots_y_and_u():
    data = json.loads((paths.REPO / "config" / "netloop.perspective").read_text())
    manager = data["groups"]["pluginmanager"]
    assert ast.literal_eval(manager["keys"]["running-plugins"]["repr"]) == {"rqt_plot/Plot": [1]}
    keys = manager["groups"]["plugin__rqt_plot__Plot__1"]["groups"]["plugin"]["keys"]
    values = {k: ast.literal_eval(v["repr"]) for k, v in keys.items()}
    assert values["topics"] == ["/y/value", "/u/value"]
    assert values["autoscroll"] is True
