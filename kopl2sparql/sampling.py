"""Random well-typed programs for any KB, read off its schema: what the cross-engine tests
and benchmarks run when they must not depend on one KB's templates.

Programs are grown step by step; each choice (a relation, an attribute, an operator) is
made among those the type checker accepts for the value on top of the stack, so nearly
every draw is well typed (the rest are redrawn). Entities are named by name or, now and
then, by label (an ambiguous label names several). Numbers come from the KB's values so
that filters and comparisons cut sets rather than keep or drop everything.

>>> from ontology import Schema
>>> s = Schema.from_turtle_text('''
... @prefix ex: <http://example.org/> .
... ex:a a ex:T ; ex:r ex:b ; ex:n 1 .  ex:b a ex:T ; ex:n 2 .''')
>>> programs = random_programs(s, 20, seed=1)
>>> len(programs), all(check(p, s).complete for p in programs)
(20, True)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kopl2sparql.errors import ProgramTypeError
from kopl2sparql.program import COMPARATORS, Program, Step
from kopl2sparql.typecheck import check
from ontology import Schema


class _Grower:
    def __init__(self, schema: Schema, rng: random.Random, numbers: Mapping[str, Sequence]):
        self.schema, self.rng, self.numbers = schema, rng, numbers
        self.entities = schema.entity_names()
        self.labels = sorted({schema.label(n) for n in self.entities if schema.label(n) != n})
        self.numeric = sorted(a for a, info in schema.attributes.items() if info.numeric)

    def classes(self, steps: list[Step]):
        return check(Program(tuple(steps)), self.schema, allow_prefix=True).stack[-1].classes

    def entity(self) -> str:
        if self.labels and self.rng.random() < 0.25:
            return self.rng.choice(self.labels)
        return self.rng.choice(self.entities)

    def number(self, attribute: str | None) -> str:
        values = self.numbers.get(attribute) if attribute else None
        if values:
            return str(self.rng.choice(values))
        return str(self.rng.randint(0, 10))

    def entity_set(self, depth: int) -> list[Step]:
        rng, schema = self.rng, self.schema
        steps = [Step("Find", (self.entity(),))]
        for _ in range(rng.randint(0, depth)):
            classes = self.classes(steps)
            move = rng.random()
            if move < 0.45:
                forward = rng.random() < 0.6
                options = [name for name, r in schema.relations.items()
                           if schema.overlaps(classes, r.domain if forward else r.range)]
                if options:
                    steps.append(Step("Relate" if forward else "RelateInv", (rng.choice(sorted(options)),)))
            elif move < 0.6:
                options = [a for a in self.numeric if schema.overlaps(classes, schema.attributes[a].domain)]
                if options:
                    a = rng.choice(options)
                    steps.append(Step("FilterNum", (a, rng.choice(COMPARATORS), self.number(a))))
            elif move < 0.7:
                options = [a for a in self.numeric if schema.overlaps(classes, schema.attributes[a].domain)]
                if options:
                    steps.append(Step(rng.choice(("Argmax", "Argmin")), (rng.choice(options),)))
            elif depth > 1:
                other = self.entity_set(depth // 2)
                op = rng.choice(("And", "Or", "Diff"))
                candidate = [*steps, *other, Step(op)]
                try:
                    check(Program(tuple(candidate)), self.schema, allow_prefix=True)
                    steps = candidate
                except ProgramTypeError:
                    pass
        return steps

    def number_value(self, depth: int) -> tuple[list[Step], str | None]:
        steps = self.entity_set(depth)
        classes = self.classes(steps)
        options = [a for a in self.numeric if self.schema.overlaps(classes, self.schema.attributes[a].domain)]
        if options and self.rng.random() < 0.5:
            a = self.rng.choice(options)
            return [*steps, Step("QueryAttr", (a,))], a
        return [*steps, Step("Count")], None

    def program(self, depth: int) -> Program:
        rng = self.rng
        kind = rng.random()
        if kind < 0.3:
            steps = [*self.entity_set(depth), Step("QueryName")]
        elif kind < 0.4:
            steps = self.entity_set(depth)
        elif kind < 0.55:
            steps = self.number_value(depth)[0]
        elif kind < 0.65:
            steps = self.entity_set(depth)
            classes = self.classes(steps)
            attrs = [a for a, info in self.schema.attributes.items()
                     if not info.numeric and self.schema.overlaps(classes, info.domain)]
            steps.append(Step("QueryAttr", (rng.choice(sorted(attrs)),)) if attrs else Step("Count"))
        elif kind < 0.75:
            left, _ = self.number_value(depth // 2)
            right, _ = self.number_value(depth // 2)
            steps = [*left, *right, Step("Compare", (rng.choice(COMPARATORS),))]
        elif kind < 0.85:
            value, attribute = self.number_value(depth)
            steps = [*value, Step("VerifyNum", (rng.choice(COMPARATORS), self.number(attribute)))]
        else:
            steps = self.entity_set(depth)
            classes = self.classes(steps)
            options = [n for n, r in self.schema.relations.items() if self.schema.overlaps(classes, r.domain)]
            if not options:
                steps.append(Step("Count"))
            else:
                steps.append(Step("VerifyRel", (rng.choice(sorted(options)), self.entity())))
        return Program(tuple(steps))


def random_programs(schema: Schema, n: int, seed: int = 0, *, depth: int = 4,
                    numbers: Mapping[str, Sequence] | None = None) -> list[Program]:
    """``n`` random complete programs that pass the type checker on ``schema`` (deterministic
    for a seed). ``numbers`` maps numeric attributes to values to draw bounds from."""
    rng = random.Random(seed)
    grower = _Grower(schema, rng, numbers or {})
    if not grower.entities:
        raise ValueError("the KB has no entities to start programs from")
    out: list[Program] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 50 * n + 100:
            raise ValueError(f"could not draw {n} well-typed programs on this schema")
        try:
            program = grower.program(depth)
            check(program, schema)
        except ProgramTypeError:
            continue
        out.append(program)
    return out


__all__ = ["random_programs"]
