"""Candidate enumeration around the question's entities."""

from __future__ import annotations


import pytest

from kopl2sparql.compiler import compile_program
from kopl2sparql.errors import ExecutionError
from kopl2sparql.syntax import parse
from kopl2sparql.typecheck import check
from parsers.enumerate import MAX_HOPS, enumerate_programs, link_entities, shapes_for
from synkqa.benchmark.templates import templates

VALUES = {"Person": "Person_00371", "City": "City_0736", "City1": "City_0736", "City2": "City_0001",
          "Country": "Country_038", "Org": "Org_0042"}


def test_link_entities_in_order_of_first_mention():
    assert link_entities("Is City_0002 larger than City_0001 or City_0002?") == ["City_0002", "City_0001"]
    assert link_entities("Does Person_00001 work for Org_0002?") == ["Person_00001", "Org_0002"]
    assert link_entities("Which city is the largest?") == []
    assert link_entities("Person_1x and XCity_0001") == []          # whole names only


@pytest.mark.parametrize("template", templates(), ids=lambda t: t.name)
def test_gold_program_of_every_template_is_enumerated(template):
    slots = {s: VALUES[s] for s in template.slot_names}
    gold = template.program_text(**slots)
    for paraphrase in ("train", "test"):
        texts = [c.text for c in enumerate_programs(template.question(paraphrase, **slots))]
        assert gold in texts
        assert len(texts) == len(set(texts))


def test_candidates_type_check_and_compile(kb_schema):
    for question in ("In which year was Person_00371 born?", "Which employees of Org_0042 were born in City_0736?",
                     "Does City_0736 have a larger population than City_0001?", "What is the GDP of Country_038?",
                     "Is Person_00371 taller than Person_00002?"):
        candidates = enumerate_programs(question)
        assert candidates
        for c in candidates:
            checked = check(c.program, kb_schema)    # raises on an ill-typed program
            assert checked.complete
            assert c.sparql == compile_program(parse(c.text), kb_schema).sparql
            assert c.sparql.lstrip().startswith(("PREFIX", "SELECT", "ASK"))


def test_shapes_beyond_the_templates():
    texts = {c.text for c in enumerate_programs("Who is the tallest employee of Org_0042?")}
    assert "Find(Org_0042);RelateInv(works_at);Argmax(height_cm);QueryName()" in texts
    assert "Find(Org_0042);RelateInv(works_at);Count()" in texts
    assert "Find(Org_0042);Relate(headquarters_in);Relate(located_in);QueryAttr(gdp_billion_usd)" in texts
    persons = {c.text for c in enumerate_programs("Is Org_0042 the employer of Person_00371?")}
    # VerifyRel roles follow the schema (a person works at an organisation), not word order.
    assert persons == {"Find(Person_00371);VerifyRel(works_at,Org_0042)"}
    siblings = {c.text for c in enumerate_programs("Who was born in the same city as Person_00371?")}
    assert "Find(Person_00371);Relate(born_in);RelateInv(born_in);QueryName()" in siblings


def test_walking_back_along_a_function_is_left_out():
    for c in enumerate_programs("City_0736"):
        assert "RelateInv(located_in);Relate(located_in)" not in c.text
        assert "RelateInv(born_in);Relate(born_in)" not in c.text
    for c in enumerate_programs("City_0736 City_0001"):
        assert "RelateInv(born_in);VerifyRel(born_in" not in c.text


def test_every_linked_entity_is_used():
    for c in enumerate_programs("Does Person_00371 work for Org_0042?"):
        assert "Person_00371" in c.text and "Org_0042" in c.text and c.coverage == 1.0
    many = enumerate_programs("Person_00371, City_0736 and Org_0042")
    assert {c.coverage for c in many} == {1 / 3, 2 / 3}
    assert enumerate_programs("Which city is the largest?") == []


def test_counts_are_moderate_and_enumeration_is_fast():
    classes = [("Person",), ("City",), ("Country",), ("Organization",), ("City", "City"),
               ("Person", "Person"), ("Organization", "City"), ("Person", "Organization")]
    for cls in classes:
        shapes = shapes_for(cls)
        assert 1 <= len(shapes) <= 300, (cls, len(shapes))
        assert max(s.hops for s in shapes) <= MAX_HOPS
    question = "The organization Person_00371 works for is headquartered in which country?"
    enumerate_programs(question)
    # Shapes are typed once per class sequence: asking again reuses them (speed is measured
    # in synkqa bench, not asserted here).
    from parsers.enumerate import _shapes_cached
    before = _shapes_cached.cache_info()
    for _ in range(20):
        enumerate_programs(question)
    after = _shapes_cached.cache_info()
    assert after.misses == before.misses and after.hits > before.hits


def test_candidates_run_on_the_store(kb_store, kb_schema):
    from store.executor import SparqlExecutor
    executor = SparqlExecutor(kb_store, kb_schema)
    ran = 0
    for c in enumerate_programs("Which employees of Org_0042 were born in City_0736?") + \
            enumerate_programs("Person_00371")[:25]:
        try:
            answer = executor.execute(c.program)
        except ExecutionError:
            continue          # e.g. QueryAttr on a set that turned out not to be one entity
        assert answer.kind == {"bool": "bool", "count": "number", "year": "number",
                               "quantity": "number"}.get(c.answer_type, "entities")
        ran += 1
    assert ran >= 25
