"""Hostile inputs for every CLI entry point, and the driver that runs them under limits.

:func:`cases` makes deterministic cases (command-line arguments plus files to create):
random bytes and mutations of valid inputs for programs, program files, Turtle KBs,
KQA Pro JSON KBs, SPARQL queries, evaluation data and dataset directories.
:func:`main` runs a list of them through the real CLI (typer's CliRunner, in one process
so that hundreds of cases cost seconds) and prints one JSON line per case. The test runs
the driver in a child process with an address-space limit, so a case that tries to take
all memory fails the run instead of the machine.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import tempfile
import time
from pathlib import Path

VALID_PROGRAMS = [
    "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()",
    "Find(City_0359);RelateInv(born_in);FilterNum(height,>,190);Count()",
    "Find(Country_062);QueryAttr(gdp)",
    "Find(Org_0122);RelateInv(works_at);Find(City_0359);RelateInv(born_in);And();Count()",
]
VALID_QUERIES = [
    "SELECT ?s WHERE { ?s a <http://synkqa.org/ontology#Person> } LIMIT 3",
    "ASK { ?s ?p ?o }",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(?o > 3) }",
]
VALID_TURTLE = (b"@prefix ex: <http://example.org/> .\n"
                b"ex:a ex:knows ex:b ; ex:age 31 ; <http://www.w3.org/2000/01/rdf-schema#label> \"a\" .\n")
VALID_KQAPRO = {"concepts": {"Q5": {"name": "human", "subclassOf": []}},
                "entities": {"Q1": {"name": "Ada", "instanceOf": ["Q5"],
                                    "attributes": [{"key": "height", "value": {"type": "quantity", "value": 170,
                                                                             "unit": "centimetre"},
                                                    "qualifiers": {}}],
                                    "relations": []}}}
VALID_RECORD = {"id": "test-00000", "split": "test", "question": "In which year was Person_01503 born?",
                "choices": ["1963", "1950", "1959", "1954", "1960", "1955", "1961", "1967", "1957", "1964"],
                "answer": "1959", "kopl": "Find(Person_01503);QueryAttr(birth_year)", "template_id": 0,
                "template": "BirthYear", "reasoning": "attribute", "hops": 1}

_TROUBLE = ["\x00", "\x1b]0;x\x07", "é", "\u202e", "\ud800", "(" * 3000, "{" * 3000, "[" * 5000, ";" * 2000,
            "\n", "'", '"', "\\", "#", "9" * 400, "-0", "NaN", "1e999", " " * 10]


def _mutate(rng: random.Random, text: str) -> str:
    """A few random edits: delete, duplicate, insert a troublemaker, truncate."""
    for _ in range(rng.randint(1, 4)):
        if not text:
            text = rng.choice(_TROUBLE)
            continue
        i = rng.randrange(len(text))
        kind = rng.randrange(5)
        if kind == 0:
            text = text[:i] + text[i + rng.randint(1, 8):]
        elif kind == 1:
            j = min(len(text), i + rng.randint(1, 40))
            text = text[:j] + text[i:j] * rng.randint(1, 50) + text[j:]
        elif kind == 2:
            text = text[:i] + rng.choice(_TROUBLE) + text[i:]
        elif kind == 3:
            text = text[:i]
        else:
            text = text[:i] + chr(rng.randrange(1, 0x3000)) + text[i + 1:]
    return text


def _bytes(rng: random.Random, valid: bytes) -> bytes:
    """Random bytes, or a valid document mutated at the byte level (often no longer UTF-8)."""
    if rng.random() < 0.3:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    data = bytearray(valid)
    for _ in range(rng.randint(1, 5)):
        if not data:
            break
        i = rng.randrange(len(data))
        choice = rng.randrange(3)
        if choice == 0:
            data[i] = rng.randrange(256)
        elif choice == 1:
            del data[i:i + rng.randint(1, 20)]
        else:
            data[i:i] = rng.choice(_TROUBLE).encode("utf-8", "surrogatepass")
    return bytes(data)


def _text_arg(text: str) -> str:
    # argv cannot carry NUL or lone surrogates: the shell could not pass them either
    return text.replace("\x00", "?").encode("utf-8", "replace").decode("utf-8")


def cases(count: int, seed: int = 0) -> list[dict]:
    """``count`` cases spread over the entry points; ``{FILE}`` in args is the case's file."""
    rng = random.Random(seed)
    kqapro = json.dumps(VALID_KQAPRO).encode()
    record = json.dumps(VALID_RECORD).encode() + b"\n"
    makers = [
        lambda: {"args": ["execute", _text_arg(_mutate(rng, rng.choice(VALID_PROGRAMS)))]},
        lambda: {"args": ["compile", _text_arg(_mutate(rng, rng.choice(VALID_PROGRAMS)))]},
        lambda: {"args": ["execute", "--json", _text_arg(_mutate(rng, json.dumps(
            [{"function": "Find", "inputs": ["Person_00371"], "dependencies": []},
             {"function": "QueryName", "inputs": [], "dependencies": [0]}])))]},
        lambda: {"args": ["execute", "--input", "{FILE}", "--json"],
                 "file": _bytes(rng, "\n".join(VALID_PROGRAMS).encode())},
        lambda: {"args": ["execute", "--kb", "{FILE}", "Find(a);QueryName()"], "file": _bytes(rng, VALID_TURTLE),
                 "suffix": ".ttl"},
        lambda: {"args": ["sparql", _text_arg(_mutate(rng, rng.choice(VALID_QUERIES)))]},
        lambda: {"args": ["kb", "validate", "--file", "{FILE}"], "file": _bytes(rng, VALID_TURTLE),
                 "suffix": ".ttl"},
        lambda: {"args": ["kb", "import", "--kqapro", "{FILE}", "--out", "{OUT}"], "file": _bytes(rng, kqapro),
                 "suffix": ".json"},
        lambda: {"args": ["evaluate", "--system", "oracle", "--data", "{DIR}", "--backend", "native"],
                 "files": _splits(rng, record)},
        lambda: {"args": ["dataset", "stats", "--dir", "{DIR}"], "files": _splits(rng, record)},
    ]
    out = []
    for n in range(count):
        case = makers[n % len(makers)]()
        if "file" in case:
            case["file"] = base64.b64encode(case["file"]).decode()
        if "files" in case:
            case["files"] = {name: base64.b64encode(data).decode() for name, data in case["files"].items()}
        out.append(case)
    return out


def _splits(rng: random.Random, record: bytes) -> dict[str, bytes]:
    """A dataset directory of three small splits, one of them mutated."""
    files = {f"{split}.jsonl": record * 3 for split in ("train", "validation", "test")}
    broken = rng.choice(sorted(files))
    files[broken] = _bytes(rng, files[broken])
    return files


def main() -> None:
    """Run the cases in ``sys.argv[1]`` (a JSON list); one JSON result line per case."""
    from typer.testing import CliRunner

    from synkqa.cli import app

    runner = CliRunner()
    for number, case in enumerate(json.loads(Path(sys.argv[1]).read_text())):
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp) / "data"
            directory.mkdir()
            file = directory / case.get("name", "input" + case.get("suffix", ".txt"))
            if "file" in case:
                file.write_bytes(base64.b64decode(case["file"]))
            for name, data in case.get("files", {}).items():
                (directory / name).write_bytes(base64.b64decode(data))
            args = [a.replace("{FILE}", str(file)).replace("{OUT}", str(Path(tmp) / "out.ttl"))
                    .replace("{DIR}", str(directory)) for a in case["args"]]
            started = time.monotonic()
            result = runner.invoke(app, args)
            crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
            print(json.dumps({"case": number, "args": [a[:200] for a in case["args"]], "exit": result.exit_code,
                              "crashed": f"{type(result.exception).__name__}: {result.exception}"[:500]
                              if crashed else None,
                              "traceback": "Traceback" in result.output, "output_chars": len(result.output),
                              "head": result.output[:300],
                              "seconds": round(time.monotonic() - started, 3)}), flush=True)


if __name__ == "__main__":
    main()
