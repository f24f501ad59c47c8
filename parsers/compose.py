"""A compositional program space: every KoPL program a question's entities, numbers and
operator cues make possible, typed by the schema, built once per *signature*.

Where :mod:`parsers.enumerate` builds the nine templates' neighbourhood (chains, one
attribute or superlative, two-entity pairs), this enumerator combines the operators the
language has (RnG-KBQA enumerates; here the grammar is wider and pruned by the question):

==========================  ===========================================================
set expressions             ``Find(e)`` + a chain of 0–4 hops (one entity); two branches of
                            0–2 hops ending on one class joined by ``And``, ``Or`` or
                            ``Diff`` (either order), then 0–1 more hop; three 0–1-hop
                            branches joined two levels deep (leaves in mention order)
modifiers                   ``FilterNum(a, op, n)`` for every number of the question (``op``
                            from the words before it, both directions when they do not say;
                            an attribute of a subclass narrows the set to it), then
                            ``Argmax``/``Argmin(a)`` when the question has a superlative
                            (on chains of up to 3 hops), then 0–1 more hop after it (on
                            chains of up to 2)
terminals                   ``QueryName``, ``Count``, ``QueryAttr(a)`` (single entities),
                            ``Count;VerifyNum`` / ``QueryAttr;VerifyNum`` (a number left over)
two values compared         ``V(e1);V(e2);Compare(op)``, ``V`` = 0–2 hops then
                            ``QueryAttr(a)`` (one entity) or ``Count`` (a set), both orders
membership                  ``Find(x);chain(0–3);VerifyRel(r, y)``, either entity as ``x``
==========================  ===========================================================

Pruning by the question, so the space stays a few hundred programs: every entity and
every number is used exactly once; ``Or`` only with "or"/"either", ``Diff`` only with a
negation ("not", "except", "other than", ...), ``Argmax``/``Argmin`` only with a
superlative; ``And`` of one functional relation from two entities (always empty) is left
out, as is walking back along a function (``RelateInv(r);Relate(r)``).

The programs depend on the entities' *classes*, the numbers' comparators and those cues,
not on names: shapes are built once per signature with ``{e0}``-style entity slots and
``{v0}``-style value slots (a number in the unit of the attribute it is compared with,
filled by :meth:`CShape.fill`), and cached. Each shape carries what a ranker reads
(relations, attributes by role, operators, comparators, answer type, hops).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from parsers.linking import LinkedQuestion

__all__ = ["CShape", "Signature", "signature_of", "shapes_for_signature", "Cues", "cues_of", "unit_scale",
           "MAX_CHAIN", "COMPARE_OPS"]

MAX_CHAIN = 4
"""Longest chain from a single entity."""
COMPARE_OPS = (">", "<")
"""Comparators enumerated for ``Compare`` (``=`` is added when the question says "same"/"equal")."""


# ---- cues ---------------------------------------------------------------------------------------

_NEGATION = re.compile(r"\b(not|n't|never|except|excluding|exclude|apart from|aside from|other than|besides|"
                       r"but not|without|else than|no longer|outside of)\b")
_NOT_NEGATION = re.compile(r"\b(not|no) (more|less|fewer|greater|smaller|higher|lower) than\b|\bnot only\b")
_UNION = re.compile(r"\b(or|either)\b")
_NOT_UNION = re.compile(r"\b(yes or no|true or false|or not|or more|or less|or fewer|or above|or below|"
                        r"or higher|or lower|or greater|or over|or under|or else not)\b")
_SUPERLATIVE_WORDS = frozenset(("most", "least", "fewest", "max", "min", "maximum", "minimum", "top", "best",
                                "worst"))
_NOT_SUPERLATIVE = frozenset(("interest", "forest", "honest", "modest", "earnest", "harvest", "suggest", "west",
                              "rest", "test", "contest", "protest", "request", "arrest", "invest", "manifest",
                              "digest", "guest", "nest", "quest", "chest", "vest", "pest", "zest", "lest"))
_EQUAL = re.compile(r"\b(same|equal|identical|as many|as much|as large|as big|as old|as tall)\b")


@dataclass(frozen=True)
class Cues:
    """What in a question's wording prunes the program space."""

    negation: bool
    union: bool
    superlative: bool
    equality: bool


def _superlative(words) -> bool:
    for i, w in enumerate(words):
        if w in ("most", "least") and i and words[i - 1] == "at":
            continue                       # "at least 5", "at most 5": a bound, not a superlative
        if w in _SUPERLATIVE_WORDS:
            return True
        if len(w) > 4 and w.endswith("est") and w not in _NOT_SUPERLATIVE:
            return True
    return False


def cues_of(linked: LinkedQuestion) -> Cues:
    text = " ".join(linked.words)
    negation = bool(_NEGATION.search(_NOT_NEGATION.sub(" ", text.replace(" n ' t", " n't"))))
    union = bool(_UNION.search(_NOT_UNION.sub(" ", text)))
    words = [w for part in linked.words for w in part.split("-")]
    return Cues(negation, union, _superlative(words), bool(_EQUAL.search(text)))


# ---- signatures and shapes ------------------------------------------------------------------------

@dataclass(frozen=True)
class Signature:
    """What the programs of a question depend on: the classes of its entity slots (mention
    order), each number's comparator (``None``: unknown) and the cues."""

    classes: tuple[str, ...]
    numbers: tuple[str | None, ...]
    cues: Cues


def signature_of(classes: tuple[str, ...], linked: LinkedQuestion, cues: Cues | None = None) -> Signature:
    return Signature(tuple(classes), tuple(n.comparator for n in linked.numbers[:2]), cues or cues_of(linked))


@dataclass(frozen=True)
class CShape:
    """A program with entity slots ``{e0}``… and value slots ``{v0}``…, and what it says.

    ``values[i] = (number index, attribute or None)``: slot ``v<i>`` holds question number
    ``number index`` in the unit of ``attribute`` (``None``: a count). Roles: ``filters``
    ``(attribute, number index, comparator)``; ``extreme`` ``(+1 | -1, attribute)``;
    ``query_attrs`` attributes read by ``QueryAttr``; ``compare`` ``(comparator, first slot,
    second slot)``; ``verify_num`` ``(number index, comparator, attribute or None)``;
    ``diff`` the slot of the subtracted branch's entity.
    """

    template: str
    values: tuple[tuple[int, str | None], ...]
    ops: tuple[str, ...]
    relations: tuple[tuple[str, str], ...]
    attributes: tuple[str, ...]
    filters: tuple[tuple[str, int, str], ...]
    extreme: tuple[int, str] | None
    query_attrs: tuple[str, ...]
    compare: tuple[str, int, int] | None
    verify_num: tuple[int, str, str | None] | None
    diff: int | None
    union: bool
    conj: bool
    verify_rel: bool
    answer_type: str
    hops: int
    inverse_hops: int
    post_hops: int
    classes: frozenset[str]
    guessed_ops: int              # comparators the question's words did not give
    counted_class: str | None = None   # the class a Count counts (for "5 employees")
    union_slots: frozenset[int] = frozenset()   # the entity slots under an Or

    @property
    def steps(self) -> int:
        return len(self.ops)

    def fill(self, names: tuple[str, ...], linked: LinkedQuestion, scales: dict[str, Decimal]) -> str:
        values = [linked.numbers[k].value_for(scales.get(a, Decimal(1)) if a else Decimal(1))
                  for k, a in self.values]
        out = self.template
        for i, name in enumerate(names):
            out = out.replace("{e%d}" % i, name)
        for i, v in enumerate(values):
            out = out.replace("{v%d}" % i, v)
        return out


_UNIT_WORDS = {"thousand": Decimal(10) ** 3, "million": Decimal(10) ** 6, "billion": Decimal(10) ** 9,
               "trillion": Decimal(10) ** 12}


def unit_scale(info) -> Decimal:
    """The factor an attribute's values are kept in (10**9 for ``revenue_billion_usd`` or an
    attribute labelled "... in billions"), read from its name and labels."""
    words = set(re.findall(r"[a-z]+", " ".join((info.name.replace("_", " "), info.label, *info.alt_labels)).lower()))
    for word, factor in sorted(_UNIT_WORDS.items(), key=lambda kv: -kv[1]):
        if word in words or word + "s" in words:
            return factor
    return Decimal(1)


# ---- building ---------------------------------------------------------------------------------------

@dataclass
class _Build:
    """A program being built: its steps (text) and what the ranker will read."""

    steps: list[str] = field(default_factory=list)
    values: list[tuple[int, str | None]] = field(default_factory=list)
    relations: list[tuple[str, str]] = field(default_factory=list)
    filters: list[tuple[str, int, str]] = field(default_factory=list)
    extreme: tuple[int, str] | None = None
    query_attrs: list[str] = field(default_factory=list)
    compare: tuple[str, int, int] | None = None
    verify_num: tuple[int, str, str | None] | None = None
    diff: int | None = None
    union: bool = False
    conj: bool = False
    verify_rel: bool = False
    post_hops: int = 0
    classes: set[str] = field(default_factory=set)
    guessed: int = 0
    counted: str | None = None
    slots: tuple[int, ...] = ()
    union_slots: frozenset[int] = frozenset()

    def copy(self) -> "_Build":
        return _Build(list(self.steps), list(self.values), list(self.relations), list(self.filters), self.extreme,
                      list(self.query_attrs), self.compare, self.verify_num, self.diff, self.union, self.conj,
                      self.verify_rel, self.post_hops, set(self.classes), self.guessed, self.counted, self.slots,
                      self.union_slots)

    def then(self, *steps: str) -> "_Build":
        out = self.copy()
        out.steps.extend(steps)
        return out


class _Schema:
    """The schema's relations and numeric attributes by class (ancestors included)."""

    def __init__(self, schema):
        self.schema = schema
        self.relations = list(schema.relations.values())
        self.attrs: dict[str, list[str]] = {}
        self.year_attrs = {a for a, info in schema.attributes.items() if _is_year(info)}
        self.narrow: dict[tuple[str, str], str] = {}
        for cls in schema.classes:
            anc = schema.ancestors(cls)
            # An attribute of the class, of a class above it, or of a class below it (a filter
            # on "gpa" keeps the students among a set of people: the set narrows).
            self.attrs[cls] = sorted(a for a, info in schema.attributes.items()
                                     if info.numeric and (info.domain is None or info.domain in anc
                                                          or cls in schema.ancestors(info.domain)))
            for a in self.attrs[cls]:
                domain = schema.attributes[a].domain
                self.narrow[(cls, a)] = domain if domain is not None and domain not in anc else cls

    def chains(self, start: str, max_hops: int) -> list[tuple[tuple[tuple[str, str], ...], str, bool]]:
        """Relation chains from ``start``: ``(steps, end class, exactly one)``; no step walks
        back along a function it just came forward on."""
        out = [((), start, True)]
        frontier = [((), start, True)]
        schema = self.schema
        for _ in range(max_hops):
            nxt = []
            for steps, cls, one in frontier:
                for rel in self.relations:
                    for direction, src, dst in (("+", rel.domain, rel.range), ("-", rel.range, rel.domain)):
                        if src is None or dst is None or src not in schema.ancestors(cls):
                            continue
                        if steps and steps[-1] == (rel.name, "-") and direction == "+" and rel.functional:
                            continue
                        stays_one = one and direction == "+" and rel.functional and rel.total
                        nxt.append((steps + ((rel.name, direction),), dst, stays_one))
            out.extend(nxt)
            frontier = nxt
        return out


def _is_year(info) -> bool:
    from parsers.answer_type import _is_year_attribute
    return info.value_type == "year" or _is_year_attribute(info)


def _hop(b: _Build, path, cls_end: str, schema=None) -> _Build:
    out = b.then(*(f"{'Relate' if d == '+' else 'RelateInv'}({r})" for r, d in path))
    out.relations.extend(path)
    out.classes.add(cls_end)
    if schema is not None:
        # Every class the chain passes through: "the people employed by X" is explained by a
        # chain through Person even when it ends elsewhere.
        for r, d in path:
            info = schema.relations[r]
            out.classes.update(c for c in (info.domain, info.range) if c)
    return out


def _branch(slot: int, cls: str, path, end: str, schema=None) -> _Build:
    b = _Build(steps=[f"Find({{e{slot}}})"], classes={cls}, slots=(slot,))
    return _hop(b, path, end, schema)


class _Enumerator:
    def __init__(self, sch: _Schema, sig: Signature):
        self.s = sch
        self.sig = sig
        self.out: dict[str, tuple[_Build, str]] = {}      # template -> (build, answer type)

    # -- numbers
    def _ops(self, k: int) -> list[tuple[str, bool]]:
        op = self.sig.numbers[k]
        return [(op, False)] if op is not None else [(">", True), ("<", True)]

    def _filters(self, b: _Build, cls: str, numbers: tuple[int, ...]) -> list[tuple[_Build, str]]:
        """Every way to filter by all of ``numbers`` (in mention order), one attribute each,
        with the class the filtered set narrows to."""
        outs = [(b, cls)]
        for k in numbers:
            nxt = []
            for cur, ccls in outs:
                for a in self.s.attrs.get(ccls, ()):
                    for op, guessed in self._ops(k):
                        if any(f[0] == a and (f[2][0] == op[0] or "=" not in f[2] + op) for f in cur.filters):
                            continue              # the same attribute twice only as a range (>= and <=)
                        x = cur.then(f"FilterNum({a},{op},{{v{len(cur.values)}}})")
                        x.values.append((k, a))
                        x.filters.append((a, k, op))
                        x.guessed += guessed
                        nxt.append((x, self.s.narrow.get((ccls, a), ccls)))
            outs = nxt
        return outs

    # -- the tail of a set expression
    def tail(self, b: _Build, cls: str, one: bool, numbers: tuple[int, ...], allow_name: bool = True,
             superlative: bool = True) -> None:
        """Filters, a superlative, more hops after it, and a terminal, on set ``b`` of ``cls``."""
        sig = self.sig
        n = len(numbers)
        # Which numbers filter and which (at most one, the last) is verified at the end.
        splits = [(numbers, None)]
        if n:
            splits.append((numbers[:-1], numbers[-1]))
        for filt, verify in splits:
            for f, fcls in self._filters(b, cls, filt):
                one_f = one and not filt
                ends = [(f, fcls, one_f, False)]
                if sig.cues.superlative and superlative and not one_f and len(b.relations) <= 3:
                    for a in self.s.attrs.get(fcls, ()):
                        for direction, op in ((1, "Argmax"), (-1, "Argmin")):
                            x = f.then(f"{op}({a})")
                            x.extreme = (direction, a)
                            ends.append((x, self.s.narrow.get((fcls, a), fcls), True, True))
                for e, ecls, eone, extreme in ends:
                    posts = [((), ecls, eone)]
                    if extreme and len(b.relations) <= 2:
                        posts += [p for p in self.s.chains(ecls, 1) if p[0]]
                    for path, end, pone in posts:
                        x = _hop(e, path, end, self.s.schema) if path else e
                        if path:
                            x.post_hops = len(path)
                        self.terminal(x, end, pone, verify, allow_name or bool(path) or bool(filt) or extreme)

    def terminal(self, b: _Build, cls: str, one: bool, verify: int | None, allow_name: bool) -> None:
        """``allow_name`` false: ``b`` is a bare ``Find`` (its name and its count of one say nothing)."""
        if verify is None:
            if allow_name:
                self.add(b.then("QueryName()"), cls)
                c = b.then("Count()")
                c.counted = cls
                self.add(c, "count")
            if one:
                for a in self.s.attrs.get(cls, ()):
                    x = b.then(f"QueryAttr({a})")
                    x.query_attrs.append(a)
                    self.add(x, "year" if a in self.s.year_attrs else "quantity")
            return
        for op, guessed in self._ops(verify):
            if allow_name:
                c = b.then("Count()", f"VerifyNum({op},{{v{len(b.values)}}})")
                c.values.append((verify, None))
                c.verify_num = (verify, op, None)
                c.guessed += guessed
                c.counted = cls
                self.add(c, "bool")
            if one:
                for a in self.s.attrs.get(cls, ()):
                    x = b.then(f"QueryAttr({a})", f"VerifyNum({op},{{v{len(b.values)}}})")
                    x.values.append((verify, a))
                    x.query_attrs.append(a)
                    x.verify_num = (verify, op, a)
                    x.guessed += guessed
                    self.add(x, "bool")

    def add(self, b: _Build, answer_type: str) -> None:
        text = ";".join(b.steps)
        if text not in self.out:
            self.out[text] = (b, answer_type)

    # -- forms
    def run(self) -> None:
        classes = self.sig.classes
        numbers = tuple(range(len(self.sig.numbers)))
        if len(classes) == 1:
            for path, end, one in self.s.chains(classes[0], MAX_CHAIN):
                self.tail(_branch(0, classes[0], path, end, self.s.schema), end, one, numbers, allow_name=bool(path))
        elif len(classes) == 2:
            self.pairs(numbers)
            if not numbers:
                self.compare()
            self.membership(numbers)
        elif len(classes) == 3:
            self.triples(numbers)

    def _combine(self, left: _Build, right: _Build, op: str, diff_slot: int | None = None) -> _Build:
        b = left.copy()
        b.steps.extend(right.steps)
        b.steps.append(f"{op}()")
        b.relations.extend(right.relations)
        b.classes |= right.classes
        b.values.extend(right.values)
        b.union = b.union or right.union
        b.conj = b.conj or right.conj
        b.union_slots = b.union_slots or right.union_slots
        b.slots = left.slots + right.slots
        if op == "Or":
            b.union = True
            b.union_slots = frozenset(b.slots)
        elif op == "And":
            b.conj = True
        else:
            b.diff = diff_slot
        return b

    def _ops_for(self, p1, p2, c1: str, c2: str) -> list[str]:
        ops = []
        same_function = (len(p1) == 1 and p1 == p2 and c1 == c2
                         and self.s.schema.relations[p1[0][0]].functional and p1[0][1] == "-")
        if not same_function:
            ops.append("And")
        if self.sig.cues.union:
            ops.append("Or")
        if self.sig.cues.negation:
            ops.append("Diff")
        return ops

    def pairs(self, numbers) -> None:
        c0, c1 = self.sig.classes
        left = [p for p in self.s.chains(c0, 2)]
        right = [p for p in self.s.chains(c1, 2)]
        for p0, end0, _ in left:
            for p1, end1, _ in right:
                if end0 != end1 or (not p0 and not p1):
                    continue
                for op in self._ops_for(p0, p1, c0, c1):
                    orders = [(0, 1)] if op != "Diff" else [(0, 1), (1, 0)]
                    for a, b_ in orders:
                        la = _branch(a, self.sig.classes[a], p0 if a == 0 else p1, end0, self.s.schema)
                        rb = _branch(b_, self.sig.classes[b_], p1 if b_ == 1 else p0, end0, self.s.schema)
                        combined = self._combine(la, rb, op, diff_slot=b_)
                        posts = [((), end0)] + ([(p, e) for p, e, _ in self.s.chains(end0, 1) if p]
                                                if len(p0) + len(p1) <= 2 else [])
                        for post, end in posts:
                            x = _hop(combined, post, end, self.s.schema) if post else combined
                            x.post_hops = len(post)
                            self.tail(x, end, False, numbers)

    def compare(self) -> None:
        c0, c1 = self.sig.classes
        ops = list(COMPARE_OPS) + (["="] if self.sig.cues.equality else [])
        sides = {}
        for slot, cls in ((0, c0), (1, c1)):
            vals = []
            for path, end, one in self.s.chains(cls, 2):
                base = _branch(slot, cls, path, end, self.s.schema)
                if one:
                    for a in self.s.attrs.get(end, ()):
                        x = base.then(f"QueryAttr({a})")
                        x.query_attrs.append(a)
                        vals.append((x, ("attr", a)))
                elif path:
                    x = base.then("Count()")
                    x.counted = end
                    vals.append((x, ("count", end)))
            sides[slot] = vals
        for first, second in ((0, 1), (1, 0)):
            for x, kx in sides[first]:
                for y, ky in sides[second]:
                    if kx != ky and not (kx[0] == ky[0] == "count"):
                        continue
                    for op in ops:
                        b = x.copy()
                        b.steps.extend(y.steps)
                        b.steps.append(f"Compare({op})")
                        b.relations.extend(y.relations)
                        b.classes |= y.classes
                        b.query_attrs.extend(y.query_attrs)
                        b.compare = (op, first, second)
                        b.counted = b.counted or y.counted
                        self.add(b, "bool")

    def membership(self, numbers) -> None:
        if numbers:
            return
        for subj, obj in ((0, 1), (1, 0)):
            target = self.sig.classes[obj]
            anc = self.s.schema.ancestors(target)
            for path, end, _ in self.s.chains(self.sig.classes[subj], 3):
                for rel in self.s.relations:
                    if path and path[-1] == (rel.name, "-"):
                        continue
                    if rel.domain is None or rel.range is None:
                        continue
                    if rel.domain in self.s.schema.ancestors(end) and rel.range in anc:
                        b = _branch(subj, self.sig.classes[subj], path, end, self.s.schema)
                        b = b.then(f"VerifyRel({rel.name},{{e{obj}}})")
                        b.relations.append((rel.name, "+"))
                        b.verify_rel = True
                        self.add(b, "bool")

    def triples(self, numbers) -> None:
        classes = self.sig.classes
        branches = {i: [(p, e) for p, e, _ in self.s.chains(c, 1)] for i, c in enumerate(classes)}
        for shape in ("left", "right"):
            for p0, e0 in branches[0]:
                for p1, e1 in branches[1]:
                    for p2, e2 in branches[2]:
                        if not (e0 == e1 == e2):
                            continue
                        b0, b1, b2 = (_branch(i, classes[i], p, e0, self.s.schema) for i, p in ((0, p0), (1, p1), (2, p2)))
                        if shape == "left":      # (e0 OP1 e1) OP2 e2
                            for op1 in self._ops_for(p0, p1, classes[0], classes[1]):
                                if op1 == "Diff":
                                    continue
                                inner = self._combine(b0, b1, op1)
                                for op2 in self._ops_for(p0, p2, classes[0], classes[2]):
                                    self.tail(self._combine(inner, b2, op2, diff_slot=2), e0, False, numbers)
                        else:                    # e0 OP2 (e1 OP1 e2)
                            for op1 in self._ops_for(p1, p2, classes[1], classes[2]):
                                if op1 == "Diff":
                                    continue
                                inner = self._combine(b1, b2, op1)
                                for op2 in self._ops_for(p0, p1, classes[0], classes[1]):
                                    self.tail(self._combine(b0, inner, op2, diff_slot=1), e0, False, numbers)


def _shape(b: _Build, answer_type: str) -> CShape:
    ops = tuple(s[:s.index("(")] for s in b.steps)
    attrs = tuple(dict.fromkeys([*(f[0] for f in b.filters), *((b.extreme[1],) if b.extreme else ()),
                                 *b.query_attrs, *((b.verify_num[2],) if b.verify_num and b.verify_num[2] else ())]))
    hops = len(b.relations)
    if b.compare is not None:
        hops = max(1, hops)
    return CShape(";".join(b.steps), tuple(b.values), ops, tuple(b.relations), attrs, tuple(b.filters), b.extreme,
                  tuple(b.query_attrs), b.compare, b.verify_num, b.diff, b.union, b.conj, b.verify_rel, answer_type,
                  hops, sum(d == "-" for _, d in b.relations), b.post_hops, frozenset(b.classes), b.guessed, b.counted,
                  b.union_slots)


_SCHEMAS: dict[int, tuple[object, _Schema]] = {}


@lru_cache(maxsize=512)
def _cached(sig: Signature, schema_id: int) -> tuple[CShape, ...]:
    sch = _SCHEMAS[schema_id][1]
    e = _Enumerator(sch, sig)
    e.run()
    return tuple(_shape(b, t) for b, t in e.out.values())


def shapes_for_signature(sig: Signature, schema) -> tuple[CShape, ...]:
    """The shapes of a signature on ``schema`` (built once, then cached)."""
    if id(schema) not in _SCHEMAS:
        _SCHEMAS[id(schema)] = (schema, _Schema(schema))
    return _cached(sig, id(schema))
