"""Candidate programs beyond the nine templates: enumerate well-typed KoPL programs around
the entities a question mentions, by walking the schema (RnG-KBQA's enumeration step).

Entity linking is a regular expression (canonical names: ``Person_00371``, ``City_0736``,
``Country_038``, ``Org_0042``). From the linked entities, in order of first mention, the
enumerator builds every program of these shapes (``P`` is a chain of ``Relate`` /
``RelateInv`` steps along the schema's relations, no step undoing the one before it):

==========================  =======================================================
one entity ``e``            ``Find(e);P;QueryName()``  (1 to ``max_hops`` hops)
                            ``Find(e);P;QueryAttr(a)``  when ``P`` ends on exactly one entity
                            ``Find(e);P;Count()``  when ``P`` can reach several entities
                            ``Find(e);P;Argmax(a);QueryName()`` (and ``Argmin``), same condition
two entities ``e1, e2``     ``Find(e1);P;QueryAttr(a);Find(e2);P;QueryAttr(a);Compare(op)``
                            (same class, ``P`` of 0 or 1 hop ending on one entity)
                            ``Find(x);P;VerifyRel(r,y)``  (``{x, y} = {e1, e2}``, ``P`` of 0 or 1 hop)
                            ``Find(e1);RelateInv(r1);Find(e2);RelateInv(r2);And();QueryName()``
                            (and ``Count()``), when both branches reach the same class
==========================  =======================================================

A program must use every linked entity (two-entity shapes keep the order of mention where
the roles are symmetric); with three or more mentions the shapes run over every pair and
single entity instead, and :attr:`Candidate.coverage` says how many were used.

The shapes depend only on the classes of the linked entities, so they are built and
type-checked once per class sequence (with :func:`kopl2sparql.typecheck.check`) and then
filled with the names: a question costs a dictionary lookup and string formatting.
Every candidate carries what a ranker needs to read it — its relations, attributes,
operators, visited classes and answer type — and its SPARQL on demand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from kopl2sparql.program import Program, Step
from kopl2sparql.typecheck import CheckedProgram, check
from parsers.answer_type import program_answer_type
from parsers.base import default_schema
from synkqa.benchmark.kbgen import class_of_name

__all__ = ["link_entities", "Shape", "Candidate", "enumerate_programs", "shapes_for",
           "COMPARATORS_ENUMERATED", "MAX_HOPS"]

ENTITY_MENTION = re.compile(r"\b(?:Person|City|Country|Org)_[0-9]+\b")
COMPARATORS_ENUMERATED = (">", "<", ">=", "<=", "=")
"""Comparators enumerated for Compare (``!=`` is left out: nobody asks "is X's population
different from Y's" often enough to pay for the extra candidates)."""
MAX_HOPS = 3


def link_entities(question: str) -> list[str]:
    """Canonical entity names in ``question``, in order of first mention, without repeats.

    >>> link_entities("Is City_0002 larger than City_0001 or City_0002?")
    ['City_0002', 'City_0001']
    """
    seen: list[str] = []
    for m in ENTITY_MENTION.finditer(question):
        if m.group(0) not in seen:
            seen.append(m.group(0))
    return seen


def _class_of(name: str, schema) -> str | None:
    """The entity's class in the KB (its first, by name), else what its name says."""
    classes = schema.entity_classes(name)
    return min(classes) if classes else class_of_name(name)


# ---- shapes: programs with entity slots, per class sequence ------------------------------------

@dataclass(frozen=True)
class Shape:
    """A program with entity slots ``{0}``, ``{1}``: what the ranker scores.

    ``relations`` are ``(relation, direction)`` pairs in step order (direction ``+`` for
    Relate/VerifyRel, ``-`` for RelateInv); ``classes`` every class a value of the program
    can hold (entities' classes included); ``slots`` the entity slots used, in Find order.
    """

    template: str                                  # canonical text with {0}/{1} holes
    ops: tuple[str, ...]
    relations: tuple[tuple[str, str], ...]
    attributes: tuple[str, ...]
    classes: frozenset[str]
    answer_type: str
    hops: int
    comparator: str | None
    extreme: str | None                            # "Argmax" / "Argmin"
    slots: tuple[int, ...]
    checked: CheckedProgram = field(compare=False, repr=False)

    @property
    def steps(self) -> int:
        return len(self.ops)

    def fill(self, names: list[str] | tuple[str, ...]) -> str:
        return self.template.format(*names)


def _paths(start: str, max_hops: int, relations) -> list[tuple[tuple[tuple[str, str], ...], str, bool]]:
    """Every relation chain from class ``start``: ``(steps, end class, exactly-one)``."""
    out = [((), start, True)]
    frontier = [((), start, True)]
    for _ in range(max_hops):
        nxt = []
        for steps, cls, one in frontier:
            for rel in relations.values():
                for direction, src, dst in (("+", rel.domain, rel.range), ("-", rel.range, rel.domain)):
                    if src != cls:
                        continue
                    if steps and steps[-1] == (rel.name, "-") and direction == "+" and rel.functional:
                        continue                    # RelateInv(r);Relate(r) only walks back
                    stays_one = one and direction == "+" and rel.functional
                    path = (steps + ((rel.name, direction),), dst, stays_one)
                    nxt.append(path)
        out.extend(nxt)
        frontier = nxt
    return out


def _path_text(path) -> list[str]:
    return [f"{'Relate' if d == '+' else 'RelateInv'}({r})" for r, d in path]


def _attributes_of(cls: str, schema) -> list[str]:
    return sorted(a for a, info in schema.attributes.items() if info.domain == cls)


def _single(slot: int, cls: str, schema, max_hops: int) -> list[list[str]]:
    out = []
    for path, end, one in _paths(cls, max_hops, schema.relations):
        head = [f"Find({{{slot}}})", *_path_text(path)]
        if path:
            out.append(head + ["QueryName()"])
        if one:
            out.extend(head + [f"QueryAttr({a})"] for a in _attributes_of(end, schema))
        else:
            out.append(head + ["Count()"])
            for a in _attributes_of(end, schema):
                out.append(head + [f"Argmax({a})", "QueryName()"])
                out.append(head + [f"Argmin({a})", "QueryName()"])
    return out


def _pair(first: int, second: int, classes: tuple[str, ...], schema) -> list[list[str]]:
    out: list[list[str]] = []
    c1, c2 = classes[first], classes[second]
    # Compare the same attribute of two entities of one class, reached by the same 0/1-hop path.
    if c1 == c2:
        for path, end, one in _paths(c1, 1, schema.relations):
            if not one:
                continue
            for a in _attributes_of(end, schema):
                for op in COMPARATORS_ENUMERATED:
                    out.append([f"Find({{{first}}})", *_path_text(path), f"QueryAttr({a})",
                                f"Find({{{second}}})", *_path_text(path), f"QueryAttr({a})", f"Compare({op})"])
    # VerifyRel: either entity may be the subject (roles follow the schema, not word order).
    for subj, obj in ((first, second), (second, first)):
        target = classes[obj]
        for path, end, _ in _paths(classes[subj], 1, schema.relations):
            for rel in schema.relations.values():
                if path and path[-1] == (rel.name, "-"):
                    continue                        # RelateInv(r);VerifyRel(r, y): y is the start
                if rel.domain == end and rel.range == target:
                    out.append([f"Find({{{subj}}})", *_path_text(path), f"VerifyRel({rel.name},{{{obj}}})"])
    # And of two RelateInv branches that reach the same class.
    for r1 in schema.relations.values():
        if r1.range != c1:
            continue
        for r2 in schema.relations.values():
            if r2.range != c2 or r2.domain != r1.domain:
                continue
            if r1.name == r2.name and c1 == c2:
                continue                         # the same relation from two entities: usually empty
            branch = [f"Find({{{first}}})", f"RelateInv({r1.name})", f"Find({{{second}}})",
                      f"RelateInv({r2.name})", "And()"]
            out.append(branch + ["QueryName()"])
            out.append(branch + ["Count()"])
    return out


def _representative(schema, cls: str, i: int) -> str:
    """An entity of ``cls`` to type-check a shape with (the checker reads only its classes)."""
    members = schema.members(cls)
    if not members:
        raise ValueError(f"the KB has no entity of class {cls}")
    return members[min(i, len(members) - 1)]


def _describe(template: str, classes: tuple[str, ...], schema) -> Shape:
    """Type-check a shape (slots filled with representative names) and read it."""
    names = [_representative(schema, c, i) for i, c in enumerate(classes)]
    program = Program(tuple(_step(s) for s in template.format(*names).split(";")))
    checked = check(program, schema)
    ops, relations, attributes = [], [], []
    comparator = extreme = None
    hops = 0
    slot_order = tuple(int(m) for m in re.findall(r"\{(\d+)\}", template))
    for step in program.steps:
        ops.append(step.op)
        if step.op in ("Relate", "RelateInv"):
            relations.append((step.args[0], "+" if step.op == "Relate" else "-"))
            hops += 1
        elif step.op == "VerifyRel":
            relations.append((step.args[0], "+"))
            hops += 1
        elif step.op in ("QueryAttr", "Argmax", "Argmin"):
            if step.args[0] not in attributes:
                attributes.append(step.args[0])
            if step.op != "QueryAttr":
                extreme = step.op
        elif step.op == "Compare":
            comparator = step.args[0]
    visited = set()
    for st in checked.steps:
        visited |= st.output.classes
    # Compare repeats the path on the second entity: count its hops once.
    if comparator is not None:
        hops //= 2
    return Shape(template, tuple(ops), tuple(relations), tuple(attributes), frozenset(visited),
                 program_answer_type(checked, schema), hops, comparator, extreme,
                 slot_order, checked)


def _step(text: str) -> Step:
    op, _, rest = text.partition("(")
    args = rest[:-1]
    return Step(op, tuple(a for a in args.split(",")) if args else ())


@lru_cache(maxsize=256)
def _shapes_cached(classes: tuple[str, ...], max_hops: int, schema_id: int) -> tuple[Shape, ...]:
    schema = _SCHEMAS[schema_id]
    texts: list[list[str]] = []
    if len(classes) == 1:
        texts = _single(0, classes[0], schema, max_hops)
    elif len(classes) == 2:
        texts = _pair(0, 1, classes, schema)
    seen, shapes = set(), []
    for steps in texts:
        template = ";".join(steps)
        if template in seen:
            continue
        seen.add(template)
        shapes.append(_describe(template, classes, schema))
    return tuple(shapes)


_SCHEMAS: dict[int, object] = {}


def shapes_for(classes: tuple[str, ...], schema=None, max_hops: int = MAX_HOPS) -> tuple[Shape, ...]:
    """The type-checked shapes for entities of these classes (one or two), cached."""
    if schema is None:
        schema = default_schema()
    _SCHEMAS.setdefault(id(schema), schema)
    return _shapes_cached(tuple(classes), max_hops, id(schema))


# ---- candidates: shapes filled with a question's entities ---------------------------------------

@dataclass(frozen=True)
class Candidate:
    """One enumerated program for a question: a :class:`Shape` filled with entity names.

    ``entities`` are the names in slot order; ``coverage`` the fraction of the question's
    linked entities the program uses (1.0 unless the question has three or more).
    """

    shape: Shape
    entities: tuple[str, ...]
    coverage: float = 1.0
    schema: object = field(default=None, compare=False, repr=False)   # the KB's, for compiling

    @cached_property
    def text(self) -> str:
        """Canonical program text."""
        return self.shape.fill(self.entities)

    @property
    def program(self) -> Program:
        return Program(tuple(_step(s) for s in self.text.split(";")))

    @property
    def answer_type(self) -> str:
        return self.shape.answer_type

    @cached_property
    def sparql(self) -> str:
        """The program compiled to SPARQL (:func:`kopl2sparql.compiler.compile_program`)."""
        from kopl2sparql.compiler import compile_program
        return compile_program(self.program, self.schema or default_schema()).sparql

    def __str__(self) -> str:
        return self.text


def enumerate_programs(question_or_entities: str | list[str] | tuple[str, ...], schema=None,
                       max_hops: int = MAX_HOPS) -> list[Candidate]:
    """Every candidate program for a question (or for a list of linked entity names).

    Programs use all linked entities when there are one or two; with more, every single
    entity and every ordered-by-mention pair is tried (``coverage`` < 1). No entity, no
    candidate: the operator set has no way to start from a whole class.
    """
    entities = (link_entities(question_or_entities) if isinstance(question_or_entities, str)
                else list(question_or_entities))
    if schema is None:
        schema = default_schema()
    entities = [e for e in entities if _class_of(e, schema) is not None]
    n = len(entities)
    if n == 0:
        return []
    groups: list[tuple[str, ...]]
    if n <= 2:
        groups = [tuple(entities)]
    else:
        groups = [(e,) for e in entities]
        groups += [(entities[i], entities[j]) for i in range(n) for j in range(i + 1, n)]
    out = []
    for group in groups:
        coverage = len(group) / n
        classes = tuple(_class_of(e, schema) for e in group)
        for shape in shapes_for(classes, schema, max_hops):
            out.append(Candidate(shape, group, coverage, schema))
    return out
