"""The paper's surface syntax: parsing, canonical form, spans, and located syntax errors."""

from __future__ import annotations

import pytest

from kopl2sparql.errors import ProgramSyntaxError
from kopl2sparql.program import Program, Step
from kopl2sparql.syntax import parse

TEMPLATES = [
    "Find(Person_00371);QueryAttr(birth_year)",
    "Find(Person_00371);Relate(born_in);QueryName()",
    "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()",
    "Find(Person_00371);Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()",
    "Find(City_0736);RelateInv(born_in);Count()",
    "Find(City_0001);QueryAttr(population);Find(City_0002);QueryAttr(population);Compare(>)",
    "Find(Country_038);RelateInv(located_in);Argmax(population);QueryName()",
    "Find(Org_0012);RelateInv(works_at);Find(City_0736);RelateInv(born_in);And();QueryName()",
    "Find(Person_00371);VerifyRel(works_at,Org_0012)",
]


@pytest.mark.parametrize("text", TEMPLATES)
def test_canonical_text_round_trips(text):
    program = parse(text)
    assert program.canonical() == text
    assert parse(program.canonical()) == program
    assert program.source == text


def test_whitespace_newlines_and_trailing_semicolon_are_tolerated():
    text = " Find( Person_00371 ) ;\n  Relate (born_in);\n\tRelate(located_in) ;QueryName( ) ;  \n"
    program = parse(text)
    assert program.canonical() == "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()"
    assert program == Program.of(("Find", "Person_00371"), ("Relate", "born_in"),
                                 ("Relate", "located_in"), ("QueryName",))


def test_spans_locate_steps_and_arguments():
    text = "Find( Person_00371 ); FilterNum(population, >= ,12.50)"
    program = parse(text)
    find, filt = program.steps
    assert text[slice(*find.span)] == "Find( Person_00371 )"
    assert [text[slice(*s)] for s in find.arg_spans] == ["Person_00371"]
    assert text[slice(*filt.span)] == "FilterNum(population, >= ,12.50)"
    assert [text[slice(*s)] for s in filt.arg_spans] == ["population", ">=", "12.50"]
    # The number is stored in canonical form, its span still points at what was written.
    assert filt.args == ("population", ">=", "12.5")


def test_spans_do_not_affect_equality_or_hash():
    a = parse("Find(City_0001);Count()")
    b = parse("  Find(City_0001) ; Count() ")
    assert a == b and hash(a) == hash(b)
    assert a.steps[0].span != b.steps[0].span
    assert a == Program((Step("Find", ("City_0001",)), Step("Count")))


@pytest.mark.parametrize("written, canonical", [
    ("1000", "1000"), ("1000.0", "1000"), ("007.50", "7.5"), ("-0", "0"), ("-0.0", "0"),
    ("-12.25", "-12.25"), ("0.001", "0.001"),
])
def test_numbers_are_normalised(written, canonical):
    program = parse(f"Find(City_0001);QueryAttr(population);VerifyNum(>,{written})")
    assert program.steps[-1].args == (">", canonical)


@pytest.mark.parametrize("comparator", [">", "<", ">=", "<=", "=", "!="])
def test_every_comparator_parses(comparator):
    program = parse(f"Find(City_1);QueryAttr(population);Find(City_2);QueryAttr(population);"
                    f"Compare({comparator})")
    assert program.steps[-1].args == (comparator,)


def _error(text: str) -> ProgramSyntaxError:
    with pytest.raises(ProgramSyntaxError) as info:
        parse(text)
    return info.value


def _underlined(error: ProgramSyntaxError) -> str:
    return error.source[error.span[0]:error.span[1]]


@pytest.mark.parametrize("text, message, step, underlined", [
    ("Relat(born_in)", "unknown function 'Relat'; did you mean Relate?", 1, "Relat"),
    ("Find(City_1);argmax(population)", "unknown function 'argmax'; did you mean Argmax?", 2, "argmax"),
    ("Find(City_1);queryname()", "unknown function 'queryname'; did you mean QueryName?", 2, "queryname"),
    ("Find(X);Frobnicate()", "unknown function 'Frobnicate'; known: And, Argmax", 2, "Frobnicate"),
    ("Find(X,Y)", "Find takes 1 argument (entity), got 2", 1, "Y"),
    ("Find(City_1);Relate()", "Relate takes 1 argument (relation), got 0", 2, "()"),
    ("Find(City_1);QueryName(x)", "QueryName takes no arguments, got 1", 2, "x"),
    ("Find(City_1);FilterNum(population,>)",
     "FilterNum takes 3 arguments (attribute, comparator, number), got 2", 2, "(population,>)"),
    ("Find(City_1);Relate(born in)", "Relate: bad character ' ' in relation name", 2, " "),
    ("Find(City_1);Relate(born-in)", "Relate: bad character '-' in relation name", 2, "-"),
    ("Find(City_1);QueryAttr(pópulation)", "QueryAttr: bad character 'ó' in attribute name", 2, "ó"),
    ("Find(City_1);VerifyRel(works at,Org_1)", "VerifyRel: bad character ' ' in relation name", 2, " "),
    ("Find()", "Find takes 1 argument (entity), got 0", 1, "()"),
    ("Find(City_1);QueryAttr(population);VerifyNum(=>,5)", "unknown comparator '=>'", 3, "=>"),
    ("Find(City_1);QueryAttr(population);VerifyNum(>,1e6)", "expected a decimal number, got '1e6'", 3, "1e6"),
    ("Find(City_1);QueryAttr(population);VerifyNum(>,)", "missing number", 3, ")"),
    ("Find(City_1);Relate(,x)", "Relate takes 1 argument (relation), got 2", 2, "x"),
    ("Find(City_1", "missing ')' to close Find(; found the end of the program", 1, None),
    ("Find(City_1;Count()", "missing ')' to close Find(; found ';'", 1, ";"),
    ("Find(Count())", "missing ')' to close Find(; found '('", 1, "("),
    ("Find(City_1);QueryName", "missing '(' after QueryName; found the end of the program", 2, None),
    ("Find City_1", "missing '(' after Find; found 'C'", 1, "C"),
    ("Find(City_1) Count()", "expected ';' between steps, found 'C'", 1, "C"),
    ("Find(City_1);;Count()", "empty step (two ';' in a row)", 2, ";"),
    (";Find(City_1)", "empty step before ';'", 1, ";"),
    ("Find(City_1);1Count()", "expected a function name, found '1'", 2, "1"),
])
def test_syntax_errors_are_located(text, message, step, underlined):
    error = _error(text)
    assert message in error.message
    assert error.step == step
    assert error.source == text
    if underlined is not None:
        assert _underlined(error) == underlined


@pytest.mark.parametrize("text, arg, written", [
    ("Find(Person 00371)", "Person 00371", "Person 00371"),
    ("Find(Person-1)", "Person-1", "Person-1"),
    ("Find(Pérson_1)", "Pérson_1", "Pérson_1"),
    ("Find( Ada  Lovelace ;", None, None),
    ("Find( Ada Lovelace );Count()", "Ada Lovelace", "Ada Lovelace"),
    ("Find(Person_1);VerifyRel(works_at, Acme Corp. )", "Acme Corp.", "Acme Corp."),
])
def test_entity_arguments_may_be_labels(text, arg, written):
    """Changed on purpose: an entity argument is a name or a label (any text without
    ( ) , ;), so spaces and other characters in it are no syntax errors; surrounding
    spaces are dropped. Whether an entity has that name or label is for the KB to say."""
    if arg is None:
        assert "missing ')'" in _error(text).message
        return
    program = parse(text)
    step = program.steps[-1] if "VerifyRel" in text else program.steps[0]
    assert step.args[-1] == arg
    assert text[slice(*step.arg_spans[-1])] == written
    assert parse(program.canonical()) == program


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", ";", " ; "])
def test_empty_program(text):
    error = _error(text)
    assert "empty" in error.message


def test_error_message_shows_the_program_with_carets():
    error = _error("Find(Person_00371);Relat(born_in)")
    assert str(error) == (
        "syntax error: unknown function 'Relat'; did you mean Relate? (step 2, col 20)\n"
        "  Find(Person_00371);Relat(born_in)\n"
        "                     ^^^^^")


def test_missing_parenthesis_at_the_end_points_after_the_last_character():
    error = _error("Find(City_1);Count(\n\n")
    assert error.span == (19, 20)
    assert str(error).endswith("  Find(City_1);Count(\n                     ^")


def test_multiline_errors_show_the_culprit_line():
    error = _error("Find(City_1);\n  Relat(born_in);\nCount()")
    assert "(step 2, line 2, col 3)" in str(error)
    assert str(error).endswith("    Relat(born_in);\n    ^^^^^")


def test_non_string_input_is_a_programming_error():
    with pytest.raises(TypeError):
        parse(b"Find(City_1)")  # type: ignore[arg-type]


def test_parse_is_fast():
    """A few µs per short program; the bound here is loose (shared CI machines)."""
    import timeit
    text = TEMPLATES[2]
    per_call = min(timeit.repeat(lambda: parse(text), number=2000, repeat=3)) / 2000
    assert per_call < 100e-6
