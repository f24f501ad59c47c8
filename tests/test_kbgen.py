"""The generator: Table I at scale 1, scale, plausible values, determinism, atomic writes."""

from __future__ import annotations

import hashlib
from collections import Counter
from decimal import Decimal

import pyoxigraph as ox
import pytest

from synkqa.benchmark import kbgen, paths, world

# sha256 of the scale-1 KB (seed 42) as sorted N-Triples: pins the *content* across machines
# and pyoxigraph versions (the Turtle bytes are checked build-to-build below). If a deliberate
# generator change moves it, every dataset built on the KB moves too: update it knowingly.
GOLDEN_TRIPLES_SHA256 = "78df8039b19b612259dbe988f31d430a87d5f9a53a64953f5634d7e52c625ab2"


@pytest.fixture(scope="module")
def kb1():
    return kbgen.generate(42, 1)


def test_table_i_exact_at_scale_1(kb1):
    counts = kb1.counts()
    for key in ("Person", "City", "Country", "Organization", "entities", "relation_edges",
                "attribute_values"):
        assert counts[key] == kbgen.PAPER_TABLE_I[key], key
    assert len(kb1.relations) == kbgen.PAPER_TABLE_I["relation_types"]
    assert len(kb1.attributes) == kbgen.PAPER_TABLE_I["attribute_types"]


def test_canonical_names(kb1):
    assert kb1.names["Person"][371] == "Person_00371"
    assert kb1.names["City"][736] == "City_0736"
    assert kb1.names["Country"][38] == "Country_038"
    assert kb1.names["Organization"][0] == "Org_0000"
    for names in kb1.names.values():
        assert names == sorted(names) and len(set(names)) == len(names)


def test_scale_multiplies_every_count_and_widens_names():
    kb2 = kbgen.generate(42, 2)
    counts = kb2.counts()
    assert counts["entities"] == 2 * 8120
    assert counts["relation_edges"] == 2 * 14000 and counts["attribute_values"] == 2 * 16120
    assert kbgen.entity_names("Person", 120_000)[0] == "Person_000000"
    assert kbgen.entity_names("Person", 120_000)[-1] == "Person_119999"
    assert kbgen.entity_names("Country", 12_000)[-1] == "Country_11999"
    with pytest.raises(ValueError):
        kbgen.generate(42, 0)


def test_every_entity_has_one_edge_of_each_kind(kb1):
    """The cardinalities of Table I hold by construction (SHACL checks them on the RDF too)."""
    for rel, cls in (("born_in", "Person"), ("works_at", "Person"),
                     ("headquarters_in", "Organization"), ("located_in", "City")):
        subjects = [s for s, _ in kb1.relations[rel]]
        assert subjects == kb1.names[cls], rel
    # every country has a city, so Argmax over a country's cities is never empty
    assert set(o for _, o in kb1.relations["located_in"]) == set(kb1.names["Country"])


def test_values_are_plausible(kb1):
    def values(attr):
        return [Decimal(lex) for _, lex, _ in kb1.attributes[attr]]

    assert 1935 <= min(values("birth_year")) and max(values("birth_year")) <= 2006
    assert 150 <= min(values("height_cm")) and max(values("height_cm")) <= 205
    assert 10_000 <= min(values("population")) and max(values("population")) <= 20_000_000
    assert 10 <= min(values("area_km2")) and max(values("area_km2")) <= 6400
    assert 0 < min(values("revenue_billion_usd")) and max(values("revenue_billion_usd")) < 700
    assert 1850 <= min(values("founded_year")) and max(values("founded_year")) <= 2022
    assert 1 <= min(values("gdp_billion_usd")) and max(values("gdp_billion_usd")) < 26_000
    # values vary: a generator stuck on one value would pass the ranges above
    for attr in kb1.attributes:
        assert len(set(values(attr))) >= min(50, len(values(attr)) // 2), attr
    # decimals keep a fraction in canonical form, so they stay xsd:decimal through Turtle
    for attr in ("area_km2", "revenue_billion_usd", "gdp_billion_usd"):
        assert all("." in lex and not lex.endswith("0") for _, lex, _ in kb1.attributes[attr])


def _sorted_ntriples_sha256(path) -> str:
    lines = sorted(str(t) for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_two_builds_are_byte_identical(tmp_path):
    a = world.write_kb(42, 1, tmp_path / "a" / "kb.ttl")
    b = world.write_kb(42, 1, tmp_path / "b" / "kb.ttl")
    assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(b.read_bytes()).hexdigest()
    assert _sorted_ntriples_sha256(a) == GOLDEN_TRIPLES_SHA256
    c = world.write_kb(43, 1, tmp_path / "c" / "kb.ttl")
    assert c.read_bytes() != a.read_bytes()


def test_turtle_has_type_and_label_on_every_entity(kb_turtle):
    triples = list(ox.parse(path=str(kb_turtle), format=ox.RdfFormat.TURTLE))
    assert len(triples) == 2 * 8120 + 14000 + 16120
    predicates = Counter(t.predicate.value for t in triples)
    assert predicates["http://www.w3.org/1999/02/22-rdf-syntax-ns#type"] == 8120
    assert predicates["http://www.w3.org/2000/01/rdf-schema#label"] == 8120
    labels = {t.subject.value: t.object.value for t in triples if t.predicate.value.endswith("#label")}
    assert all(iri.endswith("/" + label) for iri, label in labels.items())


def test_progress_reports_every_triple(tmp_path):
    seen = []
    kbgen.write_turtle(kbgen.generate(42, 1), tmp_path / "kb.ttl", progress=seen.append)
    assert seen[-1] == 46360 and seen == sorted(seen)


def test_interrupted_write_leaves_nothing_under_the_final_name(tmp_path):
    target = tmp_path / "kb.ttl"

    def boom(done):
        if done >= 50_000 or done == 46360:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with paths.atomic_path(target) as tmp:
            kbgen.write_turtle(kbgen.generate(42, 1), tmp, progress=boom)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone too
