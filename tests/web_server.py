"""``synkqa serve`` as the web tests use it: a real server process on a free loopback port."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Served:
    url: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def rss_mb(self) -> float:
        """Resident memory of the server and its workers, in MB."""
        from evaluation.bench.serve import rss_mb
        return rss_mb(self.process.pid)


def start_server(tmp_dir: Path, *args: str, startup: float = 180.0) -> Served:
    """Start ``synkqa serve --port 0 ARGS`` and wait for the line naming its URL."""
    log = tmp_dir / f"serve-{time.monotonic_ns()}.log"
    handle = open(log, "w")
    process = subprocess.Popen([sys.executable, "-c", "from synkqa.cli import main; main()", "serve",
                                "--port", "0", *args], stdout=handle, stderr=subprocess.STDOUT,
                               cwd=ROOT, env=os.environ.copy())
    deadline = time.monotonic() + startup
    while time.monotonic() < deadline:
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/", log.read_text())
        if found:
            return Served(found.group(1), process, log)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"synkqa serve did not start: {log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def served(kb_turtle, tmp_path_factory):
    """One server on the SynKQA-Pro KB (scale 1) for the whole session."""
    server = start_server(tmp_path_factory.mktemp("serve"), "--timeout", "2", "--query-timeout", "2")
    yield server
    server.stop()
