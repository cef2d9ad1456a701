"""What a run on real machines keeps on each remote machine besides its nodes (the helper of
:class:`netloop.machines.RealHosts` for it):

* private files, written through ssh's standard input with mode 0600 into the run's folder
  there (removed with it), so that their contents never appear on a command line (``ps`` on
  either machine): the hosts file's ``env:`` values (the wrappers read them, ``--env-file``),
  and the run's heartbeat token;
* the UDP heartbeat's listener (:mod:`netloop.heartbeat`), one per machine, and the datagrams
  sent to it from here; the wrappers read its file (``--heartbeat-file``).
"""
from __future__ import annotations

import json
import secrets
import shlex
import subprocess
from typing import TYPE_CHECKING

from .heartbeat import TOKEN_BYTES, Beats
from .processes import _die_with_parent

if TYPE_CHECKING:  # pragma: no cover - types only
    from .machines import RealHosts


class RemoteSession:
    """The private files and heartbeat listeners of one run's remote machines."""

    def __init__(self, hosts: "RealHosts"):
        self.hosts = hosts
        self.beats = Beats(secrets.token_hex(TOKEN_BYTES // 2).encode())
        #: host -> its listener (None while it starts)
        self.listeners: dict[str, subprocess.Popen | None] = {}
        self.env_written: set[str] = set()

    def heartbeat_file(self, host: str) -> str:
        return f"{self.hosts.remote_run_dir(host)}/heartbeat"

    def env_file(self, host: str) -> str:
        return f"{self.hosts.remote_run_dir(host)}/env.json"

    def wrapper_words(self, host: str) -> list[str]:
        """What a wrapper on ``host`` is told of them: the heartbeat's file, the env file."""
        words = []
        if host in self.listeners:
            words.append(f"--heartbeat-file={self.heartbeat_file(host)}")
        if host in self.env_written:
            words.append(f"--env-file={self.env_file(host)}")
        return words

    def allow(self) -> list[str]:
        """``--allow`` words of a run's UDP servers on a machine: this machine's address (the
        local one of the hosts file; the servers add their SSH session's client themselves)."""
        return [f"--allow={m.address}" for m in self.hosts.machines.hosts.values() if m.local]

    def write_private(self, host: str, path: str, data: bytes) -> None:
        """``data`` into ``path`` on ``host``, a file only its user reads (mode 0600), sent
        through ssh's standard input: never on a command line."""
        self.hosts._ssh(host, f"umask 077 && cat > {shlex.quote(path)}", data=data)

    def write_env_file(self, host: str) -> None:
        """The hosts file's ``env`` of ``host`` (secrets, perhaps) into its private file."""
        env = self.hosts.machine(host).env
        if env:
            self.write_private(host, self.env_file(host), json.dumps(env).encode())
            self.env_written.add(host)

    def start_listener(self, host: str) -> None:
        """The run's UDP heartbeat listener on ``host``, with the run's token in a private file;
        the datagrams start at once. Its own wrapper reads its file too, so a silent operator
        stops it as it stops the nodes."""
        hosts = self.hosts
        token = self.heartbeat_file(host) + ".token"
        self.write_private(host, token, self.beats.token)
        self.listeners[host] = None
        argv, env, _ = hosts.command(host, ["python3", "-m", "netloop.heartbeat", "listen", "--bind",
                                            hosts.address(host), "--file", self.heartbeat_file(host),
                                            "--token-file", token, *self.allow()], {})
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_die_with_parent)
        line = proc.stdout.readline().decode(errors="replace")
        if not line.startswith("port "):
            del self.listeners[host]
            proc.stdin.close()
            proc.wait(timeout=10)
            raise RuntimeError(f"the heartbeat listener on {host} did not start: "
                               f"{proc.stderr.read().decode(errors='replace').strip()[-300:]}")
        self.listeners[host] = proc
        self.beats.add(hosts.address(host), int(line.split()[1]))

    def stop_listeners(self) -> None:
        """The datagrams stopped, every listener's session closed (its wrapper stops it)."""
        self.beats.stop()
        for proc in filter(None, self.listeners.values()):
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                stream.close()
        self.listeners = {}
