"""The full-KoPL type checker: a program against a KB's vocabulary.

Checked, each error with the step and the input's position (in the program's text form)
and a "did you mean" where a name is close to a known one:

- what each step takes and gives (entities, entities reached through facts, values, final
  answers; :mod:`kqapro.functions`); the last step must give an answer, not entities;
- names: entity (Find), concept, relation, attribute key, qualifier key; direction;
- value types: FilterStr/Num/Year/Date (and QFilter*, Verify*) need a key (or the values
  queried) of that type; years and dates go together, but a Year function takes a year
  (``1984``) and a Date function a date (``1984-12-30``); SelectBetween/SelectAmong need a
  quantity key;
- units: a quantity written with a unit the key never has (``188 foot``) is an error, and
  so is a bare number for a key that always has a unit;
- operators: ``= != < >``; ``greater``/``less``; ``largest``/``smallest``; strings take no
  ``<``/``>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from kqapro.functions import FUNCTIONS, accepts
from kqapro.kb import KB
from kqapro.program import Program
from kqapro.values import NO_UNIT, Value, ValueError_
from ontology.errors import ProgramTypeError, safe_text, unknown_name_message


@dataclass(frozen=True)
class StepType:
    kind: str
    """entities, facts, values, names, count, relations or verdict."""
    value_types: frozenset[str] = frozenset()
    """For ``values``: the types the values can have."""


_TIME = frozenset({"year", "date"})


def _compatible(function_type: str, types: frozenset[str]) -> bool:
    if function_type in ("year", "date"):
        return bool(types & _TIME)
    return function_type in types


class _Units:
    """Units seen per quantity key (attributes and qualifiers)."""

    def __init__(self, kb: KB):
        units: dict[str, set] = {}
        facts = [a for e in kb.entities.values() for a in e.attributes]
        for a in facts:
            if a.value.type == "quantity":
                units.setdefault(a.key, set()).add(a.value.unit)
        for fact in facts + kb.relations:
            for k, values in fact.qualifiers:
                for v in values:
                    if v.type == "quantity":
                        units.setdefault(k, set()).add(v.unit)
        self.units = {k: frozenset(v) for k, v in units.items()}


@lru_cache(maxsize=8)
def _units(kb: KB) -> dict[str, frozenset[str]]:
    return _Units(kb).units


def check(program: Program, kb: KB) -> list[StepType]:
    """The type of every step; raises :class:`ProgramTypeError` at the first problem."""
    types: list[StepType] = []

    for i, step in enumerate(program.steps):
        f = FUNCTIONS[step.function]
        roles = dict(zip(f.inputs, step.inputs))

        def fail(message: str, role: str | None = None) -> None:
            # the text form and its spans only when there is an error to show
            source, spans, input_spans = program.text_and_spans()
            span = input_spans[i][f.inputs.index(role)] if role in f.inputs else spans[i]
            raise ProgramTypeError(message, source, span, step=i + 1)

        for k, dep in enumerate(step.dependencies):
            got = types[dep].kind
            if not accepts(f.takes[k], got):
                want = {"entities": "entities", "facts": "entities reached through facts (Filter*, Relate)",
                        "values": "values (QueryAttr*, Query*Qualifier)"}[f.takes[k]]
                fail(f"{f.name} takes {want}, but step {dep + 1} ({program.steps[dep].function}) gives {got}")

        def known(role: str, what: str, vocabulary) -> str:
            name = roles[role]
            if name not in vocabulary:
                fail(unknown_name_message(what, safe_text(name, 80), vocabulary), role)
            return name

        def read(role: str, kind: str, key: str | None) -> Value:
            text = roles[role]
            try:
                value = Value.parse(text, kind)
            except ValueError_ as e:
                fail(str(e), role)
            if f.value_type == "year" and value.type != "year":
                fail(f"{f.name} takes a year (like 1984), not {safe_text(text, 40)!r}", role)
            if f.value_type == "date" and value.type != "date":
                fail(f"{f.name} takes a date (YYYY-MM-DD), not {safe_text(text, 40)!r}; "
                     f"use {f.name.replace('Date', 'Year')} for a year", role)
            if value.type == "quantity" and key is not None:
                seen = _units(kb).get(key)
                if seen and value.unit not in seen:
                    shown = ", ".join(sorted("no unit" if u == NO_UNIT else u for u in seen))
                    extra = " (write the unit after the number)" if value.unit == NO_UNIT else ""
                    fail(f"{safe_text(key, 60)!r} is measured in {shown}; "
                         f"{safe_text(text, 40)!r} never compares{extra}", role)
            return value

        def key_of(role: str, vocabulary: dict, kind_needed: str | None, what: str) -> str:
            key = known(role, what, vocabulary)
            if kind_needed and not _compatible(kind_needed, vocabulary[key]):
                have = "/".join(sorted(vocabulary[key]))
                fail(f"{what} {safe_text(key, 60)!r} has {have} values, {f.name} needs {kind_needed}", role)
            return key

        if "op" in roles and roles["op"] not in f.ops:
            fail(f"{f.name} takes an operator among {', '.join(f.ops)}, not {safe_text(roles['op'], 20)!r}", "op")
        if "direction" in roles and roles["direction"] not in ("forward", "backward"):
            fail(f"the direction is 'forward' or 'backward', not {safe_text(roles['direction'], 20)!r}",
                 "direction")
        if "name" in roles:
            known("name", "entity", kb.by_name)
        if "concept" in roles:
            known("concept", "concept", kb.concepts_by_name)
        if "relation" in roles:
            known("relation", "relation", kb.relation_names)

        out = StepType(f.gives)
        name = f.name
        if name.startswith("Filter") and name != "FilterConcept":
            key = key_of("key", kb.attribute_keys, f.value_type, "attribute key")
            read("value", f.value_type, key)
        elif name.startswith("QFilter"):
            key = key_of("qkey", kb.qualifier_keys, f.value_type, "qualifier key")
            read("qvalue", f.value_type, key)
        elif name in ("SelectBetween", "SelectAmong"):
            key_of("key", kb.attribute_keys, "quantity", "attribute key")
        elif name == "QueryAttr":
            key = key_of("key", kb.attribute_keys, None, "attribute key")
            out = StepType("values", kb.attribute_keys[key])
        elif name == "QueryAttrUnderCondition":
            key = key_of("key", kb.attribute_keys, None, "attribute key")
            qkey = key_of("qkey", kb.qualifier_keys, None, "qualifier key")
            read("qvalue", _read_as(kb, qkey), qkey)
            out = StepType("values", kb.attribute_keys[key])
        elif name == "QueryAttrQualifier":
            key = key_of("key", kb.attribute_keys, None, "attribute key")
            read("value", _read_as(kb, key), key)
            qkey = key_of("qkey", kb.qualifier_keys, None, "qualifier key")
            out = StepType("values", kb.qualifier_keys[qkey])
        elif name == "QueryRelationQualifier":
            qkey = key_of("qkey", kb.qualifier_keys, None, "qualifier key")
            out = StepType("values", kb.qualifier_keys[qkey])
        elif name.startswith("Verify"):
            have = types[step.dependencies[0]].value_types
            if not _compatible(f.value_type, have):
                fail(f"{f.name} checks {f.value_type} values, but step {step.dependencies[0] + 1} "
                     f"gives {'/'.join(sorted(have))} values")
            read("value", f.value_type, _verified_key(program, step.dependencies[0]))
        types.append(out)

    last = types[-1]
    if last.kind in ("entities", "facts"):
        source, spans, _ = program.text_and_spans()
        raise ProgramTypeError("the program ends in a set of entities; end it with What, Count or "
                               "another function that answers", source, spans[-1], step=len(types))
    return types


def _read_as(kb: KB, key: str) -> str:
    kind = kb.key_type(key)
    return "string" if kind in (None, "mixed") else kind


def _verified_key(program: Program, step: int) -> str | None:
    """The key whose values a Verify step checks (for its unit check)."""
    s = program.steps[step]
    if s.function in ("QueryAttr", "QueryAttrUnderCondition"):
        return s.inputs[0]
    if s.function == "QueryAttrQualifier":
        return s.inputs[2]
    if s.function == "QueryRelationQualifier":
        return s.inputs[1]
    return None
