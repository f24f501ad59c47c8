"""The schema of a large SynKQA-Pro KB without a dictionary entry per entity.

Every bench worker needs the KB's :class:`~ontology.Schema` (names, IRIs and classes of the
entities, for type checking and compiling). ``Schema.from_turtle`` keeps four dictionaries
with an entry per entity and reads the whole Turtle in Python: at scale 100 (812,000
entities) that is 108 s, 2.1 GB at its peak and 1.5 GB kept, so about 15-21 GB per worker
at scale 1000, which does not fit beside the engines on a 24 GB machine.

The KB of ``synkqa.benchmark.kbgen`` names its entities by rule (``Person_0001234``: a
class prefix and a zero-padded id below the class's count), each has one class, its label
is its name and its IRI the entity namespace plus the name. So from :data:`HUGE_SCALE` on
the bench takes the vocabulary (classes, relations, attributes: the same at every scale,
:func:`lean_schema` checks) from the scale-1 KB and answers the per-entity questions from
the rule, in mappings that compute their values. Answers are still checked against native;
``tests/test_bench.py`` checks the rule against ``Schema.from_turtle`` at scale 2.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from ontology import Schema, schema_path
from synkqa.benchmark import kbgen


class _Names:
    """The entity names of one (seed, scale) KB of the generator, by rule."""

    def __init__(self, scale: int):
        self.classes: dict[str, tuple[int, int]] = {}          # prefix -> (width, count)
        self.class_of_prefix: dict[str, str] = {}
        for cls, base in kbgen.BASE_COUNTS.items():
            count = base * scale
            prefix = kbgen.NAME_PREFIX[cls]
            self.classes[prefix] = (max(kbgen.BASE_WIDTHS[cls], len(str(count - 1))), count)
            self.class_of_prefix[prefix] = cls
        self.total = sum(count for _, count in self.classes.values())

    def class_of(self, name) -> str | None:
        """The class of ``name`` if it is an entity of this KB, else ``None``."""
        if not isinstance(name, str):
            return None
        prefix, _, digits = name.rpartition("_")
        found = self.classes.get(prefix)
        if found is None or len(digits) != found[0] or not digits.isdigit() or not digits.isascii():
            return None
        return self.class_of_prefix[prefix] if int(digits) < found[1] else None

    def __iter__(self) -> Iterator[str]:
        # Class by class in id order (the order of the Turtle), not sorted across classes.
        for prefix, (width, count) in self.classes.items():
            for i in range(count):
                yield f"{prefix}_{i:0{width}d}"


class _ByName(Mapping):
    """name -> ``value(name, class)`` for the KB's entities."""

    def __init__(self, names: _Names, value):
        self._names, self._value = names, value

    def __getitem__(self, name):
        cls = self._names.class_of(name)
        if cls is None:
            raise KeyError(name)
        return self._value(name, cls)

    def __contains__(self, name) -> bool:
        return self._names.class_of(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return self._names.total


class _ByIri(Mapping):
    """IRI -> name for the KB's entities (all in the entity namespace)."""

    def __init__(self, names: _Names, namespace: str):
        self._names, self._namespace = names, namespace

    def __getitem__(self, iri):
        if isinstance(iri, str) and iri.startswith(self._namespace):
            name = iri[len(self._namespace):]
            if self._names.class_of(name) is not None:
                # One string per entity, as the full schema's dictionary gives: the native
                # index keeps a name once per fact, and copies cost ~3 GB at scale 1000.
                return sys.intern(name)
        raise KeyError(iri)

    def __contains__(self, iri) -> bool:
        try:
            self[iri]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return (self._namespace + name for name in self._names)

    def __len__(self) -> int:
        return self._names.total


def lean_schema(scale: int, small: Schema | None = None, seed: int = 42) -> Schema:
    """The schema of the scale-``scale`` KB, entities by rule, vocabulary from ``small`` (the
    schema of a small KB of the same generator; default: scale 1 of seed 42 in the cache).

    :raises ValueError: if ``small`` is not a KB of the generator (its entities do not follow
        the rule, or have labels other than their names).
    """
    if small is None:
        from synkqa.benchmark.world import ensure_turtle

        small = Schema.from_turtle(schema_path(), ensure_turtle(seed, 1))
    namespace = small.entity_namespace
    sample = next(iter(small.entity_iris))
    if (small.entity_labels or small.entity_iris[sample] != namespace + sample
            or kbgen.class_of_name(sample) not in small.entity_types[sample]):
        raise ValueError("the small schema is not of a SynKQA-Pro KB from the generator")
    names = _Names(scale)
    types = {cls: frozenset({cls}) for cls in kbgen.BASE_COUNTS}
    lean = copy.copy(small)
    lean.entity_iris = _ByName(names, lambda name, cls: namespace + name)
    lean.entity_types = _ByName(names, lambda name, cls: types[cls])
    lean.entity_labels = {}                                    # every label is the name
    lean._names_of_iri = _ByIri(names, namespace)
    lean._by_label = _ByName(names, lambda name, cls: (name,))
    lean._ancestors = dict(small._ancestors)
    lean._members = {}
    # Every name is written plainly in the entity namespace: give the shape cache of
    # kopl2sparql.shapes the mapping itself rather than let it copy 8 million entries.
    from kopl2sparql import shapes

    shapes._PLAIN[id(lean)] = (lean, lean.entity_types)
    return lean


def schema_for(turtle: Path, scale: int, seed: int = 42) -> Schema:
    """What a bench worker uses: ``Schema.from_turtle`` below :data:`HUGE_SCALE`, the lean
    schema from it on."""
    from evaluation.bench.config import HUGE_SCALE

    if scale >= HUGE_SCALE:
        return lean_schema(scale, seed=seed)
    return Schema.from_turtle(schema_path(), turtle)
