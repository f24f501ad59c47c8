"""Program shapes: a program with its entity names abstracted (what the compiler's prepared
queries, the batch planner and the type checker's cache key on).
"""

from __future__ import annotations

import re

from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import ArgKind, Step
from ontology import Schema

_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
_ENTITY_ARGS = {name: tuple(i for i, kind in enumerate(op.args) if kind is ArgKind.ENTITY)
                for name, op in OPERATORS.items()}


def program_shape(steps: tuple[Step, ...], schema: Schema) -> tuple[tuple, tuple[str, ...]] | None:
    """``(key, names)``: the program with its entity names abstracted, and the names.

    Everything the compiler's output depends on stays in the key: the operators and their
    other arguments, each entity's classes (they pick variable names), which entity arguments
    are the same entity (And of one entity twice, guard de-duplication) and the order of
    the distinct names (Or of constants sorts them). ``None`` when an argument is not the
    name of an entity of the schema written plainly in its entity namespace: such programs
    are compiled directly.
    """
    names: list[str] = []
    index: dict[str, int] = {}
    key = []
    plain = _plain_names(schema)
    for step in steps:
        positions = _ENTITY_ARGS.get(step.op)
        if not positions:
            key.append((step.op, step.args))
            continue
        args = list(step.args)
        for i in positions:
            if i >= len(args):
                return None
            name = args[i]
            if not isinstance(name, str):
                return None
            k = index.get(name)
            if k is None:
                cls = plain.get(name)
                if cls is None:
                    return None
                k = index[name] = len(names)
                names.append(name)
            else:
                cls = None                      # the classes are in the key at first appearance
            args[i] = (k, cls)
        key.append((step.op, tuple(args)))
    order = tuple(sorted(range(len(names)), key=names.__getitem__))
    return (tuple(key), order), tuple(names)


_PLAIN: dict[int, tuple[Schema, dict]] = {}


def _plain_names(schema: Schema) -> dict[str, frozenset[str]]:
    """Entity name -> classes, for the names written plainly in the entity namespace (once per schema)."""
    entry = _PLAIN.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_PLAIN) > 64:
            _PLAIN.clear()
        namespace = schema.entity_namespace
        plain = {name: types for name, types in schema.entity_types.items()
                 if _NAME.match(name) and schema.entity_iris[name] == namespace + name}
        entry = _PLAIN[id(schema)] = (schema, plain)
    return entry[1]


__all__ = ["program_shape"]
