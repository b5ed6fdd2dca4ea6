"""``windowkeeper serve`` as a real process on loopback, for tests of what users run::

    with LoopbackUpstream() as upstream, serve_process("--upstream", upstream.base_url) as url:
        httpx.post(f"{url}/v1/chat/completions", ...)

What holds: the URL is only yielded once ``/healthz`` answers; a process that exits
early fails with its stderr; on exit the process gets SIGTERM (then SIGKILL after 30 s)
and, with ``check_exit``, must have stopped cleanly (status 0).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from .server import unused_port

START_SECONDS = 30.0


class ServeFailed(AssertionError):
    """``windowkeeper serve`` did not come up, or did not stop cleanly."""


class PortTaken(ServeFailed):
    """The port was taken again before serve bound it (a race with any other socket of
    the machine): start again on another."""


@contextmanager
def serve_process(*options: str, check_exit: bool = False) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT``) of ``windowkeeper serve OPTIONS...``."""
    port = unused_port()
    command = [sys.executable, "-m", "windowkeeper", "serve", "--port", str(port),
               "--log-level", "warning", *options]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        try:
            wait_until_healthy(f"http://127.0.0.1:{port}/healthz", process)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                _, stderr = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                _, stderr = process.communicate()
    if check_exit and process.returncode != 0:
        raise ServeFailed(f"serve exited {process.returncode}: {stderr.decode(errors='replace')}")


def wait_until_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    """Return once ``url`` answers 200; fail when ``process`` exits first or is too slow."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            failed = PortTaken if "address already in use" in stderr.lower() else ServeFailed
            raise failed(f"serve exited early with {process.returncode}: {stderr}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise ServeFailed(f"serve did not come up within {START_SECONDS:.0f} s")
