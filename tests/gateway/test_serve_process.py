"""``windowkeeper serve`` as a real process: it starts, answers, and stops cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from windowkeeper.testing import unused_port
from windowkeeper.testing.serve import PortTaken, wait_until_healthy

pytest.importorskip("uvicorn")


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
            wait_until_healthy(f"http://127.0.0.1:{port}/healthz", process)
            process.send_signal(sig)
            _, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return process.returncode, stderr
