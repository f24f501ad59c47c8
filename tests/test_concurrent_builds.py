"""Concurrent first uses of the cache: one process builds the KB Turtle and the on-disk store,
the others wait for it and use what it built; a build a killed process left half-done is
redone, never used. Real processes, a fresh ``$SYNKQA_HOME`` and the real store; no mocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kopl2sparql.errors import StoreError
from store.oxigraph import OxigraphStore, file_sha256
from synkqa.benchmark import paths, world

ROOT = Path(__file__).resolve().parents[1]
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
KB_TRIPLES = 46360  # scale 1

# A child that imports everything first, says it is ready, then waits on the start pipe: the
# parent releases all children at once, so they reach the first-use build together however
# long each took to start.
CHILD = textwrap.dedent("""
    import os, sys
    ready, go = int(sys.argv[1]), int(sys.argv[2])
    from synkqa.cli import main
    import synkqa.cli.kb, synkqa.benchmark.world, store.oxigraph  # noqa: E401
    os.write(ready, b"r"); os.close(ready)
    os.read(go, 1)
    sys.argv = ["synkqa", *sys.argv[3:]]
    main()
""")


def _env(home: Path) -> dict:
    env = dict(os.environ, SYNKQA_HOME=str(home), COLUMNS="200")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _start_together(home: Path, commands: list[list[str]]) -> list[subprocess.Popen]:
    """Start ``synkqa COMMAND`` for each command in its own process and release them all at
    once, when every one has started and is blocked on the start pipe."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = []
    try:
        for command in commands:
            procs.append(subprocess.Popen(
                [sys.executable, "-c", CHILD, str(ready_w), str(go_r), *command],
                cwd=ROOT, env=_env(home), pass_fds=(ready_w, go_r), text=True,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        os.close(ready_w)
        ready_w = -1
        got = b""
        while len(got) < len(commands):
            chunk = os.read(ready_r, len(commands))
            if not chunk:  # a child died before it was ready: its stderr will say why
                break
            got += chunk
    finally:
        for fd in (go_w, ready_r, ready_w, go_r):  # closing go_w: EOF, every child goes now
            if fd >= 0:
                os.close(fd)
    return procs


def _finish(procs: list[subprocess.Popen], seen: list[str] | None = None) -> list[tuple[int, str, str]]:
    """``(exit code, stdout, stderr)`` of each process (``seen``: stderr already read)."""
    results = []
    for i, proc in enumerate(procs):
        err = (seen[i] if seen else "") + proc.stderr.read()  # stdout is one short line
        out = proc.stdout.read()
        results.append((proc.wait(timeout=300), out, err))
    return results


def _check_all_answer(results, count: int) -> None:
    for code, out, err in results:
        assert code == 0, err
        assert "Traceback" not in err, err
        assert json.loads(out)["rows"] == [{"n": count}], out


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_concurrent_first_uses_build_the_kb_and_the_store_once(tmp_path):
    home = tmp_path / "home"
    results = _finish(_start_together(home, [["sparql", "--format", "json", COUNT]] * 3))
    _check_all_answer(results, KB_TRIPLES)
    # exactly one process wrote the Turtle and exactly one loaded the store, whichever won
    errs = [err for _, _, err in results]
    assert sum("writing KB seed=42 scale=1" in err for err in errs) == 1, errs
    assert sum("loading kb-seed42-scale1.ttl" in err for err in errs) == 1, errs
    # and nothing else was left in the cache (no temporary files, no second store)
    assert {p.name for p in (home / f"v{paths.ARTEFACT_VERSION}").iterdir()} == \
        {"kb-seed42-scale1.ttl", "store-seed42-scale1", "locks"}


@pytest.mark.timeout(600)
def test_waiting_processes_say_so_and_use_the_builders_store(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("SYNKQA_HOME", str(home))
    kb = ROOT / "tests" / "fixtures" / "kb" / "campus.ttl"
    store_dir = paths.kb_file_store_dir(file_sha256(kb))
    command = ["sparql", "--kb", str(kb), "--format", "json", COUNT]
    # This process holds the build lock, so both children must wait; once each has said so,
    # the lock is let go and one of them builds, the other uses its store.
    with paths.build_lock(store_dir):
        procs = _start_together(home, [command, command])
        seen = []
        for proc in procs:
            lines = []
            for line in proc.stderr:  # until the child says it waits (or exits)
                lines.append(line)
                if "waiting for" in line:
                    break
            seen.append("".join(lines))
    results = _finish(procs, seen)
    triples = len(OxigraphStore(store_dir, read_only=True))
    assert triples > 0
    _check_all_answer(results, triples)
    for _, _, err in results:
        assert f"waiting for process {os.getpid()} to finish building {store_dir}" in err, err
    assert sum("loading campus.ttl" in err for _, _, err in results) == 1, results


def test_a_build_waits_a_bounded_time_then_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNKQA_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(paths, "BUILD_WAIT_SECONDS", 0.3)
    world.ensure_turtle(42, 1)
    path = tmp_path / "store"
    with paths.build_lock(path):  # another builder, as far as ensure_store can tell
        with pytest.raises(StoreError, match=r"still being built by process \d+ after waiting 0.3 s"):
            world.ensure_store(42, 1, path=path)
    assert not path.exists()
    assert world.ensure_store(42, 1, path=path) == path  # free again: builds
    assert OxigraphStore(path, read_only=True).record.triples == KB_TRIPLES


KILLED_BUILDER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    import pyoxigraph as ox
    from store.oxigraph import OxigraphStore
    from synkqa.benchmark import paths
    path = Path(sys.argv[1])
    with paths.build_lock(path) as lock:
        created = not path.exists()
        lock.begin(created=created)
        store = OxigraphStore(path)
        store.raw.add(ox.Quad(ox.NamedNode("http://a"), ox.NamedNode("http://b"), ox.Literal("half")))
        store.raw.flush()
        os.kill(os.getpid(), signal.SIGKILL)  # dies holding the lock, mid-build
""")


def test_a_store_a_killed_builder_left_is_rebuilt_not_used(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("SYNKQA_HOME", str(home))
    world.ensure_turtle(42, 1)
    for path in (paths.kb_store_dir(42, 1), tmp_path / "outside"):  # in the cache, and outside it
        died = subprocess.run([sys.executable, "-c", KILLED_BUILDER, str(path)], cwd=ROOT, env=_env(home),
                              capture_output=True, text=True, timeout=120)
        assert died.returncode < 0, died.stderr
        assert OxigraphStore(path, read_only=True).record is None  # half-built: no load record
        assert world.ensure_store(42, 1, path=path) == path
        store = OxigraphStore(path, read_only=True)
        assert store.record.triples == KB_TRIPLES and len(store) == KB_TRIPLES
        assert store.query("ASK { ?s ?p 'half' }") is False
        del store


def test_a_half_built_store_another_process_has_open_is_never_removed(tmp_path, monkeypatch):
    # e.g. `synkqa kb build --store DIR`, which opens the store without the build lock
    home = tmp_path / "home"
    monkeypatch.setenv("SYNKQA_HOME", str(home))
    world.ensure_turtle(42, 1)
    path = tmp_path / "outside"
    died = subprocess.run([sys.executable, "-c", KILLED_BUILDER, str(path)], cwd=ROOT, env=_env(home),
                          capture_output=True, text=True, timeout=120)
    assert died.returncode < 0, died.stderr
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom store.oxigraph import OxigraphStore\n"
         f"s = OxigraphStore({str(path)!r})\nprint('open', flush=True)\nsys.stdin.read()"],
        cwd=ROOT, env=_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        before = sorted(p.name for p in path.iterdir())
        with pytest.raises(StoreError, match="open for writing in another process"):
            world.ensure_store(42, 1, path=path)
        assert sorted(p.name for p in path.iterdir()) == before
    finally:
        holder.communicate("", timeout=60)
    assert world.ensure_store(42, 1, path=path) == path  # let go: rebuilt
    assert OxigraphStore(path, read_only=True).record.triples == KB_TRIPLES


def test_a_half_made_cache_store_directory_is_rebuilt_and_a_foreign_one_left_alone(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("SYNKQA_HOME", str(home))
    world.ensure_turtle(42, 1)
    # RocksDB's first files, without CURRENT: what a build killed while creating the store leaves
    cached = paths.kb_store_dir(42, 1)
    cached.mkdir(parents=True)
    for name in ("LOCK", "LOG", "IDENTITY", "MANIFEST-000001"):
        (cached / name).write_bytes(b"")
    assert world.ensure_store(42, 1) == cached
    assert OxigraphStore(cached, read_only=True).record.triples == KB_TRIPLES
    # outside the cache, a directory nobody noted as ours is never emptied
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not an Oxigraph store"):
        world.ensure_store(42, 1, path=foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


# What RocksDB has written when ``CURRENT`` first appears in a new store (pyoxigraph 0.5,
# RocksDB 11): a manifest with the default column family only. A process opening the store
# then got "RuntimeError: Column family not found: id2str".
HALF_MADE = {"CURRENT": b"MANIFEST-000001\n", "MANIFEST-000001": bytes.fromhex(
    "93015c5e2d000181402431366335643633652d333363622d343632322d383164622d303765376135343933376237020003020400")}


def _half_made(path: Path) -> Path:
    path.mkdir(parents=True)
    for name, data in HALF_MADE.items():
        (path / name).write_bytes(data)
    return path


def test_a_store_caught_while_being_created_is_a_clear_error_then_rebuilt(tmp_path, monkeypatch):
    from store.oxigraph import query_in_subprocess

    path = _half_made(tmp_path / "store")
    with pytest.raises(StoreError, match=f"cannot open store at {path}: it is incomplete or damaged"):
        OxigraphStore(path, read_only=True)
    with pytest.raises(StoreError, match="incomplete or damaged"):
        query_in_subprocess(path, "ASK {}")
    monkeypatch.setenv("SYNKQA_HOME", str(tmp_path / "home"))
    cached = _half_made(paths.kb_store_dir(42, 1))
    assert world.ensure_store(42, 1) == cached
    assert OxigraphStore(cached, read_only=True).record.triples == KB_TRIPLES
