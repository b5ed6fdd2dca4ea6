"""``windowkeeper serve`` as a real process: it starts, answers, and stops cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from windowkeeper.testing import unused_port

pytest.importorskip("uvicorn")


class PortTaken(Exception):
    """The port ``unused_port`` gave was taken again before serve bound it (a race with
    any other socket of the machine): start again on another."""


def _wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            if "address already in use" in stderr.lower():
                raise PortTaken(stderr)
            raise AssertionError(f"serve exited early with {process.returncode}: {stderr}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("serve did not come up within 30 s")


@pytest.mark.parametrize(
    ("sig", "http"),
    [(signal.SIGTERM, "httptools"), (signal.SIGINT, "httptools"), (signal.SIGTERM, "h11")],
    ids=["SIGTERM", "SIGINT", "SIGTERM-h11"],
)
def test_serve_stops_cleanly_and_closes_its_store(
    tmp_path: Path, sig: signal.Signals, http: str
) -> None:
    db = tmp_path / "wk.db"
    for attempt in range(3):
        try:
            returncode, stderr = _serve_then_signal(db, sig, http)
            break
        except PortTaken:
            if attempt == 2:
                raise
    assert returncode == 0, stderr.decode(errors="replace")
    assert db.exists()
    assert not (tmp_path / "wk.db-wal").exists()  # the store was closed (WAL checkpointed)


def _serve_then_signal(db: Path, sig: signal.Signals, http: str) -> tuple[int, bytes]:
    port = unused_port()
    command = [
        sys.executable, "-m", "windowkeeper", "serve", "--upstream", "http://127.0.0.1:9/v1",
        "--port", str(port), "--context-length", "16000", "--store", f"sqlite:///{db}",
        "--log-level", "warning", "--http", http,
    ]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        try:
            _wait_until_up(f"http://127.0.0.1:{port}/healthz", process)
            process.send_signal(sig)
            _, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return process.returncode, stderr
