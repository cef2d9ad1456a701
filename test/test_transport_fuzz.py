"""The relays' decoders under libFuzzer (clang, AddressSanitizer, UBSan) for a bounded time
(NETLOOP_FUZZ_SECONDS, default 10; its corpus in .build/fuzz/ grows from run to run): builds test/fuzz/fuzz_relay_wire.cpp with the wire
library and fails on any crash, leak or sanitizer report (the crashing input is kept in
.build/fuzz/). Skipped when clang with libFuzzer is not installed (Debian 12:
`apt-get install clang-14 libclang-rt-14-dev`)."""
from __future__ import annotations

import os
import subprocess

import pytest

from netloop import paths

pytestmark = pytest.mark.integration


def test_wire_decoders_survive_libfuzzer():
    seconds = int(os.environ.get("NETLOOP_FUZZ_SECONDS", "10"))
    script = paths.REPO / "test" / "fuzz" / "run_fuzz.sh"
    res = subprocess.run([str(script), str(seconds)], capture_output=True, text=True, timeout=seconds + 300)
    if res.returncode == 77:
        pytest.skip(res.stderr.strip() or "clang/libFuzzer not installed")
    tail = "\n".join((res.stdout + res.stderr).splitlines()[-40:])
    assert res.returncode == 0, f"libFuzzer found a problem (exit {res.returncode}):\n{tail}"
    assert "Done" in res.stderr, tail   # ran to the time limit
