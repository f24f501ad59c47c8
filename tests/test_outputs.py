"""Files the tool writes: regular files atomically with the user's umask; links, FIFOs and
devices written through, never replaced; what killed writers left behind cleaned up."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kopl2sparql.errors import ConfigError
from synkqa.benchmark.paths import atomic_path, clean_stale_parts


def _write(target: Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def test_new_files_get_the_users_umask(tmp_path):
    old = os.umask(0o027)
    try:
        _write(tmp_path / "out.txt", "hello")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]             # no temporary file left


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o604)
    _write(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o604


def test_a_symlink_is_written_through_and_kept(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    _write(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_a_fifo_is_written_through_and_kept(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    reader.start()
    _write(fifo, "through the pipe")
    reader.join(10)
    assert got == ["through the pipe"] and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_device_gives_one_clear_error_and_stays_a_device():
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    with pytest.raises(ConfigError, match="cannot write /dev/full"):
        _write(Path("/dev/full"), "x" * 100_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_cli_output_to_a_device_or_a_link_is_written_through(tmp_path, kb_turtle):
    from typer.testing import CliRunner
    from synkqa.cli import app
    real = tmp_path / "result.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    for out in ("/dev/null", str(link)):
        result = CliRunner().invoke(app, ["sparql", "--format", "csv", "--out", out,
                                          "SELECT ?c WHERE { ske:City_0001 a ?c }"])
        assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert link.is_symlink() and real.read_text().splitlines()[1] == "http://synkqa.org/ontology#City"


def test_stale_parts_of_killed_writers_are_removed_and_live_ones_kept(tmp_path):
    target = tmp_path / "kb.ttl"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".kb.ttl.{dead.pid}.abcd.part"
    live = tmp_path / f".kb.ttl.{os.getpid()}.efgh.part"
    stale.write_text("half")
    live.write_text("half")
    assert clean_stale_parts(target) == 1
    assert not stale.exists() and live.exists()
