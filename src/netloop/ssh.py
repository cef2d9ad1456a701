"""SSH to the real machines of a run: OpenSSH's command lines, and one multiplexed connection
per machine (its ControlMaster socket in a private directory of this run), opened at the first
command and closed with the run (``ssh -O exit``). A machine with more sessions than
``ssh.sessions_per_connection`` gets another connection, opened after the first is
authenticated, so that many replicas neither trip sshd's MaxStartups (unauthenticated
connections at once) nor its MaxSessions (sessions per connection). The hosts file's
``ssh.options`` come first on every command line, so they override netloop's defaults
(OpenSSH takes the first value it is given)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .hosts_file import Machine, Ssh
from .processes import _die_with_parent

SSH_LOST = 255   # ssh's exit status when the connection failed or was lost


class RealHostsError(RuntimeError):
    """Machines that cannot run the experiment: one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("the machines cannot run this experiment:\n  " + "\n  ".join(problems))
        self.problems = problems


def ssh_options(ssh: Ssh, control: str | None = None, master: bool = False) -> list[str]:
    """ssh's options: the hosts file's ``options`` first (OpenSSH keeps the first value of each,
    so they override what follows), then netloop's: batch mode (never a password prompt),
    timeouts, keepalives (a lost connection is noticed within ~6 s), the key, and with
    ``control`` the connection's ControlMaster socket (``master``: the one that opens it)."""
    opts: list[str] = []
    for option in ssh.options:
        opts += ["-o", option]
    opts += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={ssh.connect_timeout:g}",
             "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
    if ssh.key_file:
        opts += ["-i", os.path.expanduser(ssh.key_file), "-o", "IdentitiesOnly=yes"]
    if ssh.known_hosts:
        opts += ["-o", f"UserKnownHostsFile={os.path.expanduser(ssh.known_hosts)}"]
    if control:
        opts += ["-o", f"ControlPath={control}", "-o", f"ControlMaster={'yes' if master else 'no'}",
                 "-o", "ControlPersist=no"]
    return opts


def destination(machine: Machine) -> str:
    host = machine.ssh.host or machine.address
    return f"{machine.ssh.user}@{host}" if machine.ssh.user else host


def user_multiplexing(ssh: Ssh) -> bool:
    """Whether the hosts file's ``ssh.options`` set ControlMaster or ControlPath themselves."""
    return any(o.strip().lower().startswith(("controlmaster", "controlpath")) for o in ssh.options)


def ssh_argv(machine: Machine, control: str | None = None) -> list[str]:
    """``ssh ... user@host`` (the remote command follows as one shell-quoted word), through the
    connection whose ControlMaster socket is ``control`` (None: a connection of its own)."""
    return ["ssh", "-T", "-p", str(machine.ssh.port), *ssh_options(machine.ssh, control), destination(machine)]


class Connections:
    """The multiplexed SSH connections to one machine: ControlMaster sockets in a private
    directory, each carrying at most ``ssh.sessions_per_connection`` long-lived sessions."""

    def __init__(self, name: str, machine: Machine, directory: Path):
        self.name, self.machine, self.directory = name, machine, directory
        self.masters: list[tuple[str, subprocess.Popen]] = []
        self.sessions: list[int] = []     # long-lived sessions given out, per connection

    def _open(self) -> str:
        path = str(self.directory / f"{self.name}-{len(self.masters)}")
        argv = ["ssh", "-T", "-N", "-p", str(self.machine.ssh.port),
                *ssh_options(self.machine.ssh, path, master=True), destination(self.machine)]
        master = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + self.machine.ssh.connect_timeout + 10
        while not os.path.exists(path):    # the socket appears once the login succeeded
            if master.poll() is not None or time.monotonic() > deadline:
                if master.poll() is None:
                    master.kill()
                master.wait()
                raise ConnectionError(master.stderr.read() or "no answer")
            time.sleep(0.02)
        self.masters.append((path, master))
        self.sessions.append(0)
        return path

    def control(self, long_lived: bool) -> str:
        """The socket of a connection for one more session (a new connection when every one
        carries its share of long-lived sessions; short commands take the first). A connection
        that was lost is dropped (its sessions ended with it)."""
        alive = [i for i, (_, master) in enumerate(self.masters) if master.poll() is None]
        if len(alive) < len(self.masters):
            for _, master in self.masters:
                if master.poll() is not None and master.stderr:
                    master.stderr.close()
            self.masters = [self.masters[i] for i in alive]
            self.sessions = [self.sessions[i] for i in alive]
        if not self.masters:
            self._open()
        if not long_lived:
            return self.masters[0][0]
        limit = self.machine.ssh.sessions_per_connection
        i = next((i for i, n in enumerate(self.sessions) if n < limit), None)
        if i is None:
            self._open()
            i = len(self.masters) - 1
        self.sessions[i] += 1
        return self.masters[i][0]

    def close(self) -> None:
        """``ssh -O exit`` on every connection (its sessions end), then its process reaped."""
        for path, master in self.masters:
            if master.poll() is None:
                subprocess.run(["ssh", "-p", str(self.machine.ssh.port), *ssh_options(self.machine.ssh, path),
                                "-O", "exit", destination(self.machine)], stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=15)
                try:
                    master.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    master.kill()
                    master.wait()
            if master.stderr:
                master.stderr.close()
        self.masters, self.sessions = [], []


def ssh_problem(name: str, machine: Machine, stderr: str) -> str:
    """One line saying why ssh could not log in (from its stderr)."""
    where = f"{name} ({destination(machine)}, port {machine.ssh.port})"
    text = " ".join(stderr.strip().split())[-300:]
    if "Permission denied" in text:
        return f"{where}: SSH refused the login (key {machine.ssh.key_file or 'of ssh-agent/~/.ssh'}): {text}"
    if "Host key verification failed" in text or "REMOTE HOST IDENTIFICATION" in text:
        return (f"{where}: its host key is not known or has changed: connect once by hand (ssh) or set "
                f"ssh.known_hosts: {text}")
    return f"{where}: unreachable over SSH: {text or 'no answer'}"


#: this user's processes on a machine, as ``proc=<pid> <command line>`` lines (read by


class SshPool:
    """The SSH connections of one run, per remote machine (ControlMaster sockets in a private
    directory made at the first connection and removed by :meth:`close`)."""

    def __init__(self):
        self._connections: dict[str, Connections] = {}
        self._control_dir: Path | None = None

    def control(self, name: str, machine: Machine, long_lived: bool = False) -> str | None:
        """The ControlMaster socket of a connection to ``machine`` for one more session (opened
        here when needed; ConnectionError with ssh's words when the machine cannot be reached).
        None when the hosts file's ``ssh.options`` set ControlMaster or ControlPath: the user's
        own multiplexing (or none) applies."""
        if user_multiplexing(machine.ssh):
            return None
        if self._control_dir is None:
            # a private directory (0700) of this run; short, as a socket path must be (< 108 bytes)
            self._control_dir = Path(tempfile.mkdtemp(prefix="netloop-ssh-", dir="/tmp"))
        pool = self._connections.setdefault(name, Connections(name, machine, self._control_dir))
        return pool.control(long_lived)   # ConnectionError: ssh's own words

    def close(self) -> None:
        """Every connection closed (``ssh -O exit``), the private directory removed."""
        for pool in self._connections.values():
            try:
                pool.close()
            except (OSError, subprocess.SubprocessError):
                pass
        self._connections = {}
        if self._control_dir is not None:
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None
