"""Fuzzing the front end: whatever text comes in, parse + check raise only ProgramError.

Garbage strings, near-programs built from the language's own characters, and random
mutations of valid programs. Every error must also be well-formed: a span inside the
source, a step number inside the program, and a printable message.
"""

from __future__ import annotations

import pytest

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopl2sparql.errors import ProgramError
from kopl2sparql.kqapro import from_kqapro, to_kqapro
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program
from kopl2sparql.syntax import parse
from kopl2sparql.typecheck import check
from tests.test_kqapro import typed_programs

_SETTINGS = settings(max_examples=2000, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Characters the grammar cares about, plus whitespace and a few troublemakers.
_LANGUAGE = "();,_<>=!.-0123456789 \n\tFindRelatQuyNmACopsxgv" + "é\u00a0\x00'\"{}?#|"
_WORDS = [*OPERATORS, "born_in", "located_in", "population", "birthplace", "Person_00371",
          "City_0736", "Org_0012", "Country_038", ">", ">=", "!=", "12.5", "-3", ";", "(", ")", ","]


def _front_end(text: str, schema) -> None:
    """Parse and check; any error must be a located ProgramError."""
    try:
        program = parse(text)
        check(program, schema)
        # Accepted programs are canonical fixed points.
        again = parse(program.canonical())
        assert again == program and again.canonical() == program.canonical()
    except ProgramError as error:
        _well_formed(error, text)


def _well_formed(error: ProgramError, text: str) -> None:
    assert error.message
    assert error.source is not None
    if error.span is not None:
        start, end = error.span
        assert 0 <= start <= end <= len(error.source) + 1
    if error.step is not None:
        assert error.step >= 1
    assert str(error).startswith(error.kind)


@_SETTINGS
@given(text=st.text(max_size=80))
def test_arbitrary_unicode_text(kb_schema, text):
    _front_end(text, kb_schema)


@pytest.mark.slow
@_SETTINGS
@given(text=st.text(alphabet=_LANGUAGE, max_size=60))
def test_text_from_the_language_alphabet(kb_schema, text):
    _front_end(text, kb_schema)


@pytest.mark.slow
@_SETTINGS
@given(text=st.lists(st.sampled_from(_WORDS), max_size=25).map("".join))
def test_sequences_of_language_tokens(kb_schema, text):
    _front_end(text, kb_schema)


@st.composite
def mutated_programs(draw, schema) -> str:
    """A valid program's text after a few random character edits."""
    text = draw(typed_programs(schema, max_budget=4)).canonical()
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "swap", "duplicate"]))
        i = draw(st.integers(0, len(text)))
        if kind == "insert":
            text = text[:i] + draw(st.sampled_from(_LANGUAGE)) + text[i:]
        elif kind == "delete" and text:
            text = text[:i] + text[i + 1:]
        elif kind == "replace" and i < len(text):
            text = text[:i] + draw(st.sampled_from(_WORDS)) + text[i + 1:]
        elif kind == "swap":
            steps = text.split(";")
            j, k = draw(st.integers(0, len(steps) - 1)), draw(st.integers(0, len(steps) - 1))
            steps[j], steps[k] = steps[k], steps[j]
            text = ";".join(steps)
        elif kind == "duplicate":
            steps = text.split(";")
            j = draw(st.integers(0, len(steps) - 1))
            steps.insert(j, steps[j])
            text = ";".join(steps)
    return text


@pytest.mark.slow
@_SETTINGS
@given(data=st.data())
def test_mutations_of_valid_programs(kb_schema, data):
    _front_end(data.draw(mutated_programs(kb_schema)), kb_schema)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_prefix_of_a_valid_program_checks_as_a_prefix(kb_schema, data):
    program = data.draw(typed_programs(kb_schema, max_budget=4))
    n = data.draw(st.integers(0, len(program)))
    checked = check(program.prefix(n), kb_schema, allow_prefix=True)
    assert len(checked) == n


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["function", "inputs", "dependencies", "x"]), inner, max_size=4),
    max_leaves=12)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(value=_JSON)
def test_from_kqapro_on_arbitrary_json(kb_schema, value):
    try:
        check(from_kqapro(value), kb_schema)
    except ProgramError as error:
        assert error.message


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_from_kqapro_on_mutated_lists(kb_schema, data):
    program = data.draw(typed_programs(kb_schema, max_budget=4))
    steps = json.loads(json.dumps(to_kqapro(program)))
    i = data.draw(st.integers(0, len(steps) - 1))
    field = data.draw(st.sampled_from(["function", "inputs", "dependencies"]))
    steps[i][field] = data.draw(st.sampled_from(
        ["Relate", "SelectAmong", "What", "FindAll", [], ["x"], ["born_in", "forward"],
         ["population", "largest"], [0], [5], None, 3]))
    try:
        result = from_kqapro(steps)
        check(result, kb_schema)
    except ProgramError as error:
        assert error.message
    else:
        assert isinstance(result, Program)
