"""The answer type a question asks for, from the question alone, and a program's."""

from __future__ import annotations

import pytest

from kopl2sparql.syntax import parse
from kopl2sparql.typecheck import check
from parsers.answer_type import (BOOL, COUNT, QUANTITY, UNKNOWN, YEAR, compatible, expected_type,
                                 program_answer_type, singular, tokenize, type_lexicon)
from synkqa.benchmark.templates import templates

P, P2, C, C2, K, O = "Person_00371", "Person_00002", "City_0736", "City_0001", "Country_038", "Org_0042"

CASES = [
    # yes/no: an auxiliary first, "whether", "yes or no"
    (f"Does {P} work for {O}?", {BOOL}),
    (f"Is {C} larger than {C2} by population?", {BOOL}),
    (f"Was {P} born in {C}?", {BOOL}),
    (f"Has {O} got its head office in {C}?", {BOOL}),
    (f"Tell me whether {P} works at {O}.", {BOOL}),
    (f"{P} works for {O}, yes or no?", {BOOL}),
    # numbers
    (f"How many people were born in {C}?", {COUNT, QUANTITY}),
    (f"What is the number of people who were born in {C}?", {COUNT, QUANTITY}),
    (f"Count the people born in {C}.", {COUNT}),
    (f"Number of employees of {O}?", {COUNT, QUANTITY}),
    (f"What is the population of {C}?", {QUANTITY}),
    (f"What is the GDP of the country where {P} was born?", {QUANTITY}),
    (f"How tall is {P}?", {QUANTITY, YEAR, COUNT}),
    # years
    (f"When was {P} born?", {YEAR}),
    (f"In which year was {P} born?", {YEAR}),
    (f"What year was {O} founded?", {YEAR}),
    (f"Give the year of birth of {P}.", {YEAR}),
    (f"What is the birth year of {P}?", {YEAR}),
    # entities: the head noun after which/what, from the ontology's labels
    (f"The city where {P} was born is located in which country?", {"Country"}),
    (f"Which nation is {P}'s place of birth in?", {"Country"}),
    (f"In which city was {P} born?", {"City"}),
    (f"Which town is {P} from?", {"City"}),
    (f"Name the birthplace of {P}.", {"City"}),
    (f"What is the most populous city in {K}?", {"City"}),
    (f"Which company headquartered in {C} has the highest revenue?", {"Organization"}),
    (f"Which organizations are based in {C}?", {"Organization"}),
    (f"Which employees of {O} were born in {C}?", {"Person"}),
    (f"Which of {O}'s workers were born in {C}?", {"Person"}),
    (f"List the people who work for {O}.", {"Person"}),
    (f"Who was born in {C}?", {"Person", "Organization"}),
    (f"Where was {P} born?", {"City", "Country"}),
    # a question inside a frame is not a yes/no question
    (f"Can you tell me where {P} was born?", {"City", "Country"}),
    (f"Do you know which city {P} was born in?", {"City"}),
]


@pytest.mark.parametrize("question,allowed", CASES, ids=[q for q, _ in CASES])
def test_expected_type(question, allowed):
    assert expected_type(question).allowed == frozenset(allowed)


def test_unknown_type_judges_nothing():
    found = expected_type(f"{P} {O} {C}")
    assert found == UNKNOWN and not found.known
    assert compatible(found, "City") is None


def test_relative_where_is_not_the_question_word():
    # "where" after a noun is a relative pronoun; the question word is the later "which".
    found = expected_type(f"The city where {P} was born is located in which country?")
    assert found.cue == "which ... country"


def test_compatibility():
    country = expected_type(f"Which country is {P} from?")
    assert compatible(country, "Country") is True
    assert compatible(country, "City") is False
    place = expected_type(f"Where is {O} headquartered?")
    assert compatible(place, "City") and compatible(place, "Country")
    assert compatible(place, BOOL) is False


def test_program_answer_types_of_the_templates(kb_schema):
    want = {0: YEAR, 1: "City", 2: "Country", 3: "Country", 4: COUNT, 5: BOOL, 6: "City", 7: "Person", 8: BOOL}
    values = {"Person": P, "City": C, "City1": C, "City2": C2, "Country": K, "Org": O}
    for t in templates():
        program = t.program_text(**{slot: values[slot] for slot in t.slot_names})
        assert program_answer_type(check(parse(program), kb_schema), kb_schema) == want[t.id], t.name
    assert program_answer_type(check(parse(f"Find({P});QueryAttr(height_cm)"), kb_schema), kb_schema) == QUANTITY
    assert program_answer_type(check(parse(f"Find({O});QueryAttr(founded_year)"), kb_schema), kb_schema) == YEAR


def test_program_answer_type_of_an_entity_the_kb_does_not_have(kb_schema):
    """Find of an entity the KB does not know type-checks as any class (the run fails
    later): its answer type is every class, so an entity question's type is not judged
    against it, but a yes/no or number question's is."""
    assert kb_schema.entity_classes("Person_99999") is None
    actual = program_answer_type(check(parse("Find(Person_99999);QueryName()"), kb_schema), kb_schema)
    assert actual == "|".join(sorted(kb_schema.classes))
    assert compatible(expected_type("Which city is Person_99999?"), actual) is True
    assert compatible(expected_type("Does Person_99999 work for Org_0042?"), actual) is False
    assert compatible(expected_type("How many people are Person_99999?"), actual) is False
    # A relation after it gives the relation's range, as for a known entity.
    relate = check(parse("Find(Person_99999);Relate(born_in);QueryName()"), kb_schema)
    assert program_answer_type(relate, kb_schema) == "City"


def test_every_template_test_question_gets_its_program_type(kb_schema):
    """The test paraphrases (never used to write the rules' vocabulary) ask for the type
    their gold program gives."""
    values = {"Person": P, "City": C, "City1": C, "City2": C2, "Country": K, "Org": O}
    for t in templates():
        slots = {slot: values[slot] for slot in t.slot_names}
        actual = program_answer_type(check(parse(t.program_text(**slots)), kb_schema), kb_schema)
        for paraphrase in ("train", "test"):
            expected = expected_type(t.question(paraphrase, **slots))
            assert compatible(expected, actual) is True, (t.name, paraphrase, expected)


def test_tokens_and_lexicon():
    tokens = tokenize(f"Which country is {P}'s employer headquartered in?")
    assert [t.text for t in tokens] == ["which", "country", "is", "<person>", "employer", "headquartered", "in"]
    assert tokens[3].name == P and tokens[3].cls == "Person"
    assert singular("cities") == "city" and singular("employees") == "employee" and singular("was") == "was"
    lexicon = type_lexicon()
    assert lexicon[("nation",)] == {"Country"}                 # a class altLabel
    assert lexicon[("birthplace",)] == {"City"}                # a relation altLabel -> its range
    assert lexicon[("population",)] == {QUANTITY}              # an attribute label
    assert ("born", "in") not in lexicon and ("tallest",) not in lexicon   # verbs, superlatives
