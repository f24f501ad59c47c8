"""Split files read beside a ``manifest.json`` must be the ones it records (issue 19): a file
truncated or edited after the build is one clear error in ``dataset stats --dir`` and
``evaluate --data``, never statistics or accuracies over the wrong questions. Runs on a small
real build (a few seconds, once for the module)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from kopl2sparql.errors import DatasetError
from synkqa.benchmark import dataset as ds
from synkqa.cli import app

SIZES = {"train": 60, "validation": 20, "test": 40}
runner = CliRunner()


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory, kb_turtle):
    """A real build (manifest included) with small splits."""
    return ds.build(42, tmp_path_factory.mktemp("small") / "data", sizes=SIZES)


@pytest.fixture()
def copy(small_dataset, tmp_path):
    """A fresh copy of the small build, to damage."""
    return shutil.copytree(small_dataset, tmp_path / "copy")


def one_error_line(result) -> str:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def truncate_to_half(path) -> tuple[int, int]:
    """Keep the first half of the records; returns ``(kept, before)``."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:len(lines) // 2]))
    return len(lines) // 2, len(lines)


def test_dataset_stats_refuses_a_split_truncated_behind_its_manifest(copy):
    intact = runner.invoke(app, ["dataset", "stats", "--dir", str(copy), "--json"])
    assert intact.exit_code == 0, intact.output
    assert json.loads(intact.stdout)["splits"]["test"]["questions"] == SIZES["test"]
    kept, before = truncate_to_half(copy / "test.jsonl")
    result = runner.invoke(app, ["dataset", "stats", "--dir", str(copy)])
    assert result.exit_code == 1
    line = one_error_line(result)
    assert str(copy / "test.jsonl") in line
    assert f"{kept:,} records, manifest.json says {before:,}" in line and "truncated or edited" in line


def test_evaluate_refuses_a_split_truncated_behind_its_manifest(copy):
    kept, before = truncate_to_half(copy / "test.jsonl")
    result = runner.invoke(app, ["evaluate", "-s", "majority", "--data", str(copy), "--json"])
    assert result.exit_code == 1
    line = one_error_line(result)
    assert str(copy / "test.jsonl") in line and f"{kept:,} records, manifest.json says {before:,}" in line
    assert result.stdout == ""                               # no metrics over the wrong questions
    # Without a manifest (a user's own JSONL) the files are read as they are.
    (copy / "manifest.json").unlink()
    result = runner.invoke(app, ["evaluate", "-s", "majority", "--data", str(copy), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["overall"]["n"] == kept


def _cut_mid_record(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _append_a_space(path):
    path.write_bytes(path.read_bytes()[:-1] + b" \n")


def _same_size_edit(path):
    data = bytearray(path.read_bytes())
    at = data.index(b'"answer":"') + len(b'"answer":"')
    data[at] = ord("X") if data[at] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage,what", [
    (_cut_mid_record, "records, manifest.json says"),
    (_append_a_space, "bytes, manifest.json says"),
    (_same_size_edit, "sha256"),
])
def test_every_difference_from_the_manifest_is_named(copy, damage, what):
    damage(copy / "validation.jsonl")
    with pytest.raises(DatasetError, match=what) as info:
        ds.load_split("validation", 42, copy)
    assert str(info.value).startswith(f"{copy / 'validation.jsonl'}: ")
    ds.load_split("test", 42, copy)                          # the intact splits still read


def test_a_broken_manifest_is_an_error_and_no_manifest_no_check(copy):
    truncate_to_half(copy / "train.jsonl")
    (copy / "manifest.json").write_text('{"splits": ')
    with pytest.raises(DatasetError, match="manifest.json is not valid JSON"):
        ds.load_split("train", 42, copy)
    (copy / "manifest.json").unlink()
    assert len(ds.load_split("train", 42, copy)) == SIZES["train"] // 2
