"""A lab of "real machines" for the tests of :mod:`netloop.machines`: the hosts of a testbed
(network namespaces joined by an emulated link), each running Debian's OpenSSH server on
its own address, with a key pair and a known_hosts file made for the lab. ``netloop run``
is started inside the operator's namespace, as it would run on the operator's laptop, and
reaches the robot over SSH across the link. Root only.

    with SshLab("ethernet", tmp_path) as lab:
        lab.hosts_file(robot_env={...})      # config for --machines
        lab.netloop("run", "experiments/x.yaml", "--machines", hosts)   # in the operator's namespace
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import yaml

from netloop import paths
from netloop.testbed import Testbed, load_profile

SSHD = "/usr/sbin/sshd"


class SshLab:
    def __init__(self, profile: str, tmp: Path, ssh_hosts: tuple[str, ...] = ("robot",),
                 sshd_config: tuple[str, ...] = ()):
        """``sshd_config``: more lines of every sshd's configuration (e.g. ``MaxStartups 4:100:4``)."""
        self.tmp = Path(tmp)
        self.sshd_config = sshd_config
        self.testbed = Testbed(load_profile(profile), log_dir=self.tmp / "testbed")
        self.ssh_hosts = ssh_hosts
        self.sshd: dict[str, subprocess.Popen] = {}
        self.key = self.tmp / "id_lab"
        self.known_hosts = self.tmp / "known_hosts"

    def __enter__(self) -> "SshLab":
        self.testbed.up()
        try:
            self._keys()
            for host in self.ssh_hosts:
                self.start_sshd(host)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        hosts = list(self.sshd)
        for host in hosts:
            self.stop_sshd(host)
        for host in hosts:   # sessions whose peer went silent outlive the listener: this lab's, ended
            for pid in self.pids_in(host):
                try:
                    if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sshd:"):
                        os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.testbed.down()

    def _keys(self) -> None:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.tmp / "host_key")], check=True)
        (self.tmp / "authorized_keys").write_text((self.tmp / "id_lab.pub").read_text())
        host_pub = " ".join((self.tmp / "host_key.pub").read_text().split()[:2])
        self.known_hosts.write_text("".join(f"{self.testbed.address(h)} {host_pub}\n" for h in self.testbed.hosts))
        Path("/run/sshd").mkdir(exist_ok=True)   # sshd's privilege separation directory

    def start_sshd(self, host: str) -> None:
        config = self.tmp / f"sshd_{host}.conf"
        config.write_text("\n".join([
            f"ListenAddress {self.testbed.address(host)}", "Port 22",
            f"HostKey {self.tmp / 'host_key'}", f"AuthorizedKeysFile {self.tmp / 'authorized_keys'}",
            f"PidFile {self.tmp / f'sshd_{host}.pid'}", "PermitRootLogin prohibit-password",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            "PrintMotd no", "Subsystem sftp internal-sftp", *self.sshd_config, ""]))
        log = open(self.tmp / f"sshd_{host}.log", "ab")
        self.sshd[host] = subprocess.Popen(self.testbed.exec_prefix(host) + [SSHD, "-D", "-e", "-f", str(config)],
                                           stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while subprocess.run(self.testbed.exec_prefix(host) + ["bash", "-c", "exec 3<>/dev/tcp/%s/22" %
                                                                self.testbed.address(host)],
                             capture_output=True, executable=None).returncode != 0:
            if self.sshd[host].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd on {host} did not start: {(self.tmp / f'sshd_{host}.log').read_text()}")
            time.sleep(0.1)

    def stop_sshd(self, host: str) -> None:
        proc = self.sshd.pop(host)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def hosts_file(self, name: str = "lab", robot: dict | None = None, ssh: dict | None = None,
                   **top) -> Path:
        """A hosts file: the operator is this machine (local), the robot is reached over SSH."""
        robot_entry = {"address": self.testbed.address("robot"),
                       "ssh": {"user": "root", "key": str(self.key), "known_hosts": str(self.known_hosts),
                               **(ssh or {})},
                       "run_root": str(self.tmp / "robot_runs"), **(robot or {})}
        doc = {"description": f"test lab over {self.testbed.name}",
               "link_mbit": self.testbed.link_mbit, **top,
               "hosts": {"robot": robot_entry,
                         "operator": {"address": self.testbed.address("operator"), "local": True}}}
        path = self.tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def netloop(self, *args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
        """``bin/netloop ARGS`` on the operator (its namespace), as on the operator's laptop."""
        return subprocess.run(self.testbed.exec_prefix("operator") + [str(paths.REPO / "bin" / "netloop"), *args],
                              capture_output=True, text=True, timeout=timeout, **kw)

    def popen_netloop(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(self.testbed.exec_prefix("operator") + [str(paths.REPO / "bin" / "netloop"), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)

    def pids_in(self, host: str) -> list[int]:
        """Every process in ``host``'s namespace now."""
        out = subprocess.run(["ip", "netns", "pids", self.testbed.netns(host)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def processes_in(self, host: str, besides: tuple[int, ...] = ()) -> list[str]:
        """Command lines of the processes in ``host``'s namespace, except sshd's listeners."""
        out = []
        for pid in self.pids_in(host):
            if pid in besides or any(pid == p.pid for p in self.sshd.values()):
                continue
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
            except OSError:
                pass
        return [c for c in out if c]

    def netloop_processes_in(self, host: str) -> list[str]:
        """:meth:`processes_in` without sshd's own (a session whose peer went silent lives on
        until TCP gives up): what netloop started there."""
        return [c for c in self.processes_in(host) if not c.startswith("sshd:")]

    def ours_in(self, host: str) -> list[str]:
        """:meth:`netloop_processes_in` but packet captures (``tcpdump``), which a tool of this
        shared machine may run in any namespace it sees: what netloop left there."""
        return [c for c in self.netloop_processes_in(host) if not c.startswith("tcpdump ")]

    def silence(self, hosts: list[str] | None = None, start: float = 0.0, duration: float = 10.0):
        """A :class:`netloop.faults.FaultSchedule` for this lab's link, from an experiment's
        ``faults:`` entry (``hosts`` silent for ``duration`` s, ``start`` s after its start());
        poll() it, and end_all() on the way out."""
        from netloop.experiment import validate_experiment
        from netloop.faults import FaultSchedule
        exp = validate_experiment({"name": "silence", "link": self.testbed.name, "loop": {"type": "none"},
                                   "duration": start + duration + 1,
                                   "flows": [{"name": "f", "from": "robot", "to": "operator", "period": 0.1}],
                                   "faults": [{"at": start, "duration": duration, "hosts": hosts or []}]},
                                  name="silence")
        return FaultSchedule(exp.faults, self.testbed, log=lambda _: None)


#: Debian's multiarch folder of each machine (``uname -m``): where its shared libraries live
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "armv7l": "arm-linux-gnueabihf",
             "armv6l": "arm-linux-gnueabihf", "i686": "i386-linux-gnu"}


def faketime_library(machine: str | None = None, root: str = "/") -> str:
    """The path of Debian's libfaketime (package faketime) for ``machine`` (default this one's):
    ``/usr/lib/<multiarch>/faketime/libfaketime.so.1``, e.g. x86_64-linux-gnu on a PC and
    aarch64-linux-gnu on a 64-bit Raspberry Pi OS; whether it is there or not."""
    import platform  # noqa: PLC0415
    machine = machine or platform.machine()
    triplet = MULTIARCH.get(machine, f"{machine}-linux-gnu")
    return str(Path(root) / "usr" / "lib" / triplet / "faketime" / "libfaketime.so.1")


def env_without_ros() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ROS_")}
