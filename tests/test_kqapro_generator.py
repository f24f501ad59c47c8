"""kqapro.generator: determinism, KQA Pro's shape, consistency, every feature at a tiny scale,
and the official ``kopl`` engine answering programs on a generated KB."""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kqapro.generator import MIXED_TIME_KEYS, QUALIFIER_KEYS, ScaleError, generate, vocabulary_sizes
from ontology.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
TINY = 0.02


@pytest.fixture(scope="module")
def tiny() -> dict:
    return generate(TINY, 0)


@pytest.fixture(scope="module")
def kb1() -> dict:
    return generate(1.0, 0)


def _digest(kb: dict) -> str:
    return hashlib.sha256(json.dumps(kb, sort_keys=True).encode()).hexdigest()


def _values(kb: dict):
    """(where, key, value) for every attribute value and qualifier value."""
    for ent in kb["entities"].values():
        for fact in ent["attributes"]:
            yield "attribute", fact["key"], fact["value"]
            for qk, qvs in fact["qualifiers"].items():
                for qv in qvs:
                    yield "attribute qualifier", qk, qv
        for fact in ent["relations"]:
            for qk, qvs in fact["qualifiers"].items():
                for qv in qvs:
                    yield "relation qualifier", qk, qv


def _vocabulary(kb: dict) -> tuple[set[str], set[str]]:
    """Relation names and keys (attribute and qualifier keys) that occur."""
    relations, keys = set(), set()
    for ent in kb["entities"].values():
        for fact in ent["attributes"]:
            keys.add(fact["key"])
            keys.update(fact["qualifiers"])
        for fact in ent["relations"]:
            relations.add(fact["relation"])
            keys.update(fact["qualifiers"])
    return relations, keys


def _descendants(kb: dict) -> dict[str, set[str]]:
    """Concept id -> ids of the concepts strictly below it."""
    children = defaultdict(list)
    for cid, con in kb["concepts"].items():
        for parent in con["subclassOf"]:
            children[parent].append(cid)
    out: dict[str, set[str]] = {}

    def below(cid: str) -> set[str]:
        if cid not in out:
            found: set[str] = set()
            for child in children[cid]:
                found.add(child)
                found |= below(child)
            out[cid] = found
        return out[cid]

    for cid in kb["concepts"]:
        below(cid)
    return out


def _closure(kb: dict, concept_ids: list[str]) -> set[str]:
    """The given concepts and all their ancestors."""
    found, todo = set(), list(concept_ids)
    while todo:
        cid = todo.pop()
        if cid not in found:
            found.add(cid)
            todo.extend(kb["concepts"][cid]["subclassOf"])
    return found


def _depths(kb: dict) -> dict[str, int]:
    memo: dict[str, int] = {}

    def depth(cid: str, path: tuple[str, ...] = ()) -> int:
        assert cid not in path, f"cycle through {cid}"
        if cid not in memo:
            parents = kb["concepts"][cid]["subclassOf"]
            memo[cid] = 1 + max(depth(p, path + (cid,)) for p in parents) if parents else 0
        return memo[cid]

    return {cid: depth(cid) for cid in kb["concepts"]}


# ---- determinism and arguments ------------------------------------------------------------------

def test_same_arguments_same_kb_other_seed_other_kb():
    a, b = generate(TINY, 3), generate(TINY, 3)
    assert a == b
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert list(a["entities"]) == list(b["entities"])           # insertion order too
    assert generate(TINY, 4) != a


def test_same_bytes_in_other_processes():
    """String hashing differs between these processes; the KB must not."""
    code = ("import hashlib, json; from kqapro.generator import generate; "
            "print(hashlib.sha256(json.dumps(generate(0.05, 7), sort_keys=True).encode()).hexdigest())")
    expected = _digest(generate(0.05, 7))
    for hash_seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                             text=True, check=True, timeout=120)
        assert out.stdout.strip() == expected


@pytest.mark.parametrize("scale", [0, -1, 100.5, 1e9, float("nan"), float("inf"), "1", None, True])
def test_bad_scale_refused(scale):
    with pytest.raises(ScaleError, match="scale must be"):
        generate(scale)
    assert issubclass(ScaleError, ConfigError)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", None, True])
def test_bad_seed_refused(seed):
    with pytest.raises(ConfigError, match="seed must be"):
        generate(TINY, seed)


def test_tiny_scales_keep_the_floors():
    kb = generate(1e-6, 0)
    assert len(kb["entities"]) == 40 and len(kb["concepts"]) >= 40
    sizes = vocabulary_sizes(1e-6)
    assert (sizes["concepts"], sizes["relations"], sizes["keys"]) == (40, 20, 30)


# ---- sizes ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_sizes_at_scale_1(kb1):
    relations, keys = _vocabulary(kb1)
    assert 15_000 <= len(kb1["entities"]) <= 20_000
    assert 500 <= len(kb1["concepts"]) <= 900
    assert 250 <= len(relations) <= 400
    assert 500 <= len(keys) <= 900


def test_entity_count_is_linear_in_scale(tiny):
    assert len(tiny["entities"]) == round(17_000 * TINY)
    assert len(generate(0.05, 0)["entities"]) == 850
    relations, keys = _vocabulary(tiny)
    assert len(tiny["concepts"]) >= 40 and len(relations) >= 20 and len(keys) >= 30


# ---- consistency ----------------------------------------------------------------------------------

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BAD_TEXT = re.compile(r'[\x00-\x1f\x7f-\x9f"]')


def _check_value(value: dict) -> None:
    typ = value["type"]
    if typ == "string":
        assert set(value) == {"type", "value"} and isinstance(value["value"], str) and value["value"]
    elif typ == "quantity":
        assert set(value) == {"type", "value", "unit"}
        number, unit = value["value"], value["unit"]
        assert isinstance(unit, str) and unit
        assert type(number) in (int, float) and math.isfinite(number)
        if isinstance(number, float):
            text = repr(number)
            assert "e" not in text and len(text.split(".")[1]) <= 2 and text != "-0.0", text
    elif typ == "year":
        assert set(value) == {"type", "value"} and type(value["value"]) is int
        assert 1000 <= value["value"] <= 2025
    elif typ == "date":
        assert set(value) == {"type", "value"} and _DATE.match(value["value"])
        day = datetime.date.fromisoformat(value["value"])
        assert datetime.date(1000, 1, 1) <= day <= datetime.date(2025, 12, 31)
    else:
        raise AssertionError(f"unknown value type {typ!r}")


def _frozen(quals: dict) -> tuple:
    """A hashable form of a qualifier dict (equal dicts, equal forms)."""
    return tuple(sorted((k, tuple(tuple(sorted(v.items())) for v in vs)) for k, vs in quals.items()))


def _check_consistency(kb: dict) -> None:
    assert list(kb) == ["concepts", "entities"]
    concepts, entities = kb["concepts"], kb["entities"]
    assert all(re.fullmatch(r"C\d+", c) for c in concepts)
    assert all(re.fullmatch(r"Q\d+", e) for e in entities)
    assert not set(concepts) & set(entities)
    concept_names = [c["name"] for c in concepts.values()]
    assert len(set(concept_names)) == len(concept_names)
    assert not {e["name"] for e in entities.values()} & set(concept_names)
    for con in concepts.values():
        assert set(con) == {"name", "subclassOf"}
        assert all(p in concepts for p in con["subclassOf"]) and len(set(con["subclassOf"])) == len(con["subclassOf"])
    assert max(_depths(kb).values()) <= 6                      # also: no cycle

    forward, backward = Counter(), Counter()
    types: dict[str, set[str]] = defaultdict(set)
    for eid, ent in entities.items():
        assert set(ent) == {"name", "instanceOf", "attributes", "relations"}
        name = ent["name"]
        assert name and name == name.strip() and not _BAD_TEXT.search(name), name
        assert all(c in concepts for c in ent["instanceOf"])
        for fact in ent["attributes"]:
            assert set(fact) == {"key", "value", "qualifiers"}
        for fact in ent["relations"]:
            assert set(fact) == {"relation", "direction", "object", "qualifiers"}
            rel, obj = fact["relation"], fact["object"]
            assert obj in entities and obj != eid, (eid, fact)
            assert rel == rel.lower() and rel.strip() == rel
            quals = _frozen(fact["qualifiers"])
            if fact["direction"] == "forward":
                forward[(eid, rel, obj, quals)] += 1
            else:
                assert fact["direction"] == "backward"
                backward[(obj, rel, eid, quals)] += 1
    assert forward == backward
    assert max(forward.values()) == 1                          # no duplicate fact

    for where, key, value in _values(kb):
        _check_value(value)
        types[key].add(value["type"])
        if where != "attribute":
            assert value["type"] != "string" or value["value"]
    for key, found in types.items():
        if key in MIXED_TIME_KEYS:
            assert found <= {"year", "date"}, key
        else:
            assert len(found) == 1, (key, found)
    for ent in entities.values():
        for fact in ent["attributes"] + ent["relations"]:
            assert all(isinstance(vs, list) and vs for vs in fact["qualifiers"].values())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_consistent_at_tiny_scale(seed):
    kb = generate(TINY, seed)
    _check_consistency(kb)
    assert json.loads(json.dumps(kb)) == kb


@pytest.mark.slow
def test_consistent_at_scale_1(kb1):
    _check_consistency(kb1)


# ---- every feature occurs at a tiny scale -----------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_feature_at_tiny_scale(seed):
    kb = generate(TINY, seed)
    concepts, entities = kb["concepts"], kb["entities"]

    # concept hierarchy: 0, 1 and 2 parents; several levels
    assert set(Counter(len(c["subclassOf"]) for c in concepts.values())) == {0, 1, 2}
    assert 3 <= max(_depths(kb).values()) <= 6
    # entities with 0, 1, 2 direct concepts; 0 for about 1%
    n_concepts = Counter(len(e["instanceOf"]) for e in entities.values())
    assert set(n_concepts) == {0, 1, 2} and n_concepts[0] <= 0.03 * len(entities)

    # names: 2-5% of the entities share a name, with 1 or 2 others
    names = Counter(e["name"] for e in entities.values())
    shared = sum(k for k in names.values() if k > 1)
    assert 0.02 * len(entities) <= shared <= 0.06 * len(entities) and max(names.values()) <= 3
    text = "".join(names)
    for ch in "',()&-.éü":
        assert ch in text, ch

    # values: all types, ints and floats, negatives, zeros, units
    by_key: dict[str, list[dict]] = defaultdict(list)
    for where, key, value in _values(kb):
        by_key[key].append(value)
    attr_values = [v for w, _, v in _values(kb) if w == "attribute"]
    assert {v["type"] for v in attr_values} == {"string", "quantity", "year", "date"}
    numbers = [v["value"] for v in attr_values if v["type"] == "quantity"]
    assert any(isinstance(x, float) for x in numbers) and any(isinstance(x, int) for x in numbers)
    assert any(x < 0 for x in numbers) and any(x == 0 for x in numbers)
    assert {v["unit"] for v in by_key["height"]} == {"centimetre", "metre"}
    assert {v["unit"] for v in by_key["population"]} == {"1"}
    assert {v["unit"] for v in by_key["area"]} == {"square kilometre"}
    assert {v["type"] for v in by_key["date of birth"]} == {"date", "year"}
    years = sum(v["type"] == "year" for v in by_key["date of birth"])
    assert 0.01 <= years / len(by_key["date of birth"]) <= 0.25
    assert {v["type"] for v in by_key["inception"]} == {"year"}
    assert {v["type"] for v in by_key["official name"]} == {"string"}
    assert 2 <= len({v["value"] for v in by_key["sex or gender"]}) <= 4

    # multi-valued keys, each value at its own point in time
    multi = 0
    for ent in entities.values():
        per_key = defaultdict(list)
        for fact in ent["attributes"]:
            per_key[fact["key"]].append(fact)
        for key, facts in per_key.items():
            if len(facts) > 1 and all("point in time" in f["qualifiers"] for f in facts):
                times = [json.dumps(f["qualifiers"]["point in time"]) for f in facts]
                assert len(set(times)) == len(times), key
                multi += 1
    assert multi >= 5

    # qualifiers on attributes and relations, of every type; "point in time" mixes years and dates
    attr_quals = {k for w, k, _ in _values(kb) if w == "attribute qualifier"}
    rel_quals = {k for w, k, _ in _values(kb) if w == "relation qualifier"}
    assert {"point in time", "applies to part"} <= attr_quals
    assert {"start time", "end time", "point in time", "sport number"} <= rel_quals
    assert {v["type"] for v in by_key["point in time"]} == {"year", "date"}
    assert {v["type"] for v in by_key["start time"] + by_key["end time"]} == {"date"}
    qual_types = {v["type"] for w, _, v in _values(kb) if w != "attribute"}
    assert qual_types == {"string", "quantity", "year", "date"}
    attribute_keys = {k for w, k, _ in _values(kb) if w == "attribute"}
    assert attribute_keys & set(QUALIFIER_KEYS)                # a few keys are both

    # relations: functional and many-to-many ones, natural names
    objects = defaultdict(list)
    for eid, ent in entities.items():
        for fact in ent["relations"]:
            if fact["direction"] == "forward":
                objects[(eid, fact["relation"])].append(fact["object"])
    relation_names = {r for _, r in objects}
    assert {"place of birth", "country", "member of sports team", "spouse"} <= relation_names
    assert any(len(objs) > 1 for objs in objects.values())
    assert all(len(objs) == 1 for (_, r), objs in objects.items() if r == "place of birth")
    assert all(re.fullmatch(r"[a-z][a-z' -]*[a-z]", r) for r in relation_names)


# ---- the official kopl engine -------------------------------------------------------------------

@pytest.fixture(scope="module")
def engine(tiny):
    kopl = pytest.importorskip("kopl.kopl")
    return kopl.KoPLEngine(copy.deepcopy(tiny))     # it rewrites its input


def _concept_id(kb: dict, name: str) -> str:
    return next(cid for cid, c in kb["concepts"].items() if c["name"] == name)


def _members(kb: dict, cid: str) -> set[str]:
    return {eid for eid, e in kb["entities"].items() if cid in _closure(kb, e["instanceOf"])}


def test_kopl_counts_concepts(tiny, engine):
    below = _descendants(tiny)
    # kopl's FindAll also returns concepts, so FilterConcept keeps the subconcepts too.
    for name in ("human", "human settlement", "athlete"):
        cid = _concept_id(tiny, name)
        expected = len(_members(tiny, cid)) + len(below[cid])
        assert len(_members(tiny, cid)) > 0
        got = engine.forward(["FindAll", "FilterConcept", "Count"], [[], [name], []])
        assert int(got) == expected, name
    leaf = next(cid for cid in tiny["concepts"] if not below[cid] and len(_members(tiny, cid)) >= 2)
    got = engine.forward(["FindAll", "FilterConcept", "Count"], [[], [tiny["concepts"][leaf]["name"]], []])
    assert int(got) == len(_members(tiny, leaf))


def test_kopl_filters_and_relates(tiny, engine):
    entities = tiny["entities"]
    # FilterNum over a quantity key (kopl keeps one result per matching value)
    expected = sum(1 for e in entities.values() for f in e["attributes"]
                   if f["key"] == "population" and f["value"]["value"] > 10_000)
    got = engine.forward(["FindAll", "FilterNum", "Count"], [[], ["population", "10000", ">"], []])
    assert int(got) == expected > 0
    # FilterYear and FilterStr
    expected = sum(1 for e in entities.values() for f in e["attributes"]
                   if f["key"] == "inception" and f["value"]["value"] < 1900)
    got = engine.forward(["FindAll", "FilterYear", "Count"], [[], ["inception", "1900", "<"], []])
    assert int(got) == expected > 0
    expected = sum(1 for e in entities.values() for f in e["attributes"]
                   if f["key"] == "sex or gender" and f["value"]["value"] == "female")
    got = engine.forward(["FindAll", "FilterStr", "Count"], [[], ["sex or gender", "female"], []])
    assert int(got) == expected > 0
    # Relate forward from a person, backward from that person's birthplace
    names = Counter(e["name"] for e in entities.values())
    person = next(e for e in entities.values() if names[e["name"]] == 1
                  and any(f["relation"] == "place of birth" for f in e["relations"]))
    place = next(f["object"] for f in person["relations"] if f["relation"] == "place of birth")
    got = engine.forward(["Find", "Relate", "What"],
                         [[person["name"]], ["place of birth", "forward"], []])
    assert got == [entities[place]["name"]]
    born_there = [eid for eid, e in entities.items() for f in e["relations"]
                  if f["relation"] == "place of birth" and f["direction"] == "forward"
                  and f["object"] == place]
    got = engine.forward(["Find", "Relate", "Relate", "Count"],
                         [[person["name"]], ["place of birth", "forward"], ["place of birth", "backward"], []])
    assert int(got) == len(born_there) >= 1
