"""Full KoPL -> SPARQL 1.1 over KQA Pro's RDF model (:mod:`kqapro.rdf`).

One query per program. A step that gives entities becomes a group pattern binding one
entity variable; Filter* and Relate also remember the fact that reached each entity (head,
predicate, tail), so QFilter* can find the fact node (``pred:fact_h/r/t``) and test its
qualifiers -- chained QFilters test the same fact node, as ``kopl`` tests the same fact.

Two dialects, the same answers. ``portable`` (endpoints; Virtuoso 7 included): And/Or
operands and the inputs of aggregates are ``SELECT DISTINCT`` sub-queries, so intermediate
multiplicities never multiply, and value tests are joined. ``exists`` (the embedded Oxigraph,
Jena): written for Oxigraph's planner, which orders joins greedily from fixed estimates and
has no statistics -- operands inline, a union's branches kept apart with every later pattern
in each branch, Find patterns first in a branch, value tests as chains of one-pattern
``FILTER EXISTS``, value fields as a UNION of the four kinds of value node; each rule says
why where it is written.

Answers: What -> ``SELECT DISTINCT ?name``; Count -> ``COUNT(DISTINCT ...)``; value
answers select the value node's fields (value, unit, year, date); SelectAmong/Between
vote the unit with ``GROUP BY ... ORDER BY DESC(count) unit LIMIT 1`` and keep every
entity at the MAX/MIN; Verify* counts the values and the values that pass (yes: all pass,
no: none, not sure: some). Year/date ``=``/``!=`` are containment through ``pred:year``
(dates carry their year too), ``<``/``>`` against a date compare dates, or years when the
value is a year.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from kqapro.answers import Answer
from kqapro.functions import FUNCTIONS
from kqapro.kb import KB
from kqapro.program import Program
from kqapro.rdf import BASE, ENTITY, RELATION, RDFS, predicate_map
from kqapro.typecheck import check
from kqapro.values import Value, format_date

NAME, INSTANCE = "<pred:name>", "<pred:instance_of>"
VALUE, UNIT, YEAR, DATE = "<pred:value>", "<pred:unit>", "<pred:year>", "<pred:date>"
FACT_H, FACT_R, FACT_T = "<pred:fact_h>", "<pred:fact_r>", "<pred:fact_t>"
XSD = "http://www.w3.org/2001/XMLSchema#"
VALUE_VARS = ("val", "unit", "year", "date")
DIALECTS = ("portable", "exists")


def literal(text: str) -> str:
    """A SPARQL string literal (ECHAR escapes only: \\u escapes are pre-processed by some engines)."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{escaped}"'


def _double(number) -> str:
    return f'"{repr(float(number))}"^^<{XSD}double>'


def _date(value: Value) -> str:
    return f'"{format_date(value.value)}"^^<{XSD}date>'


# Dialect ``exists`` keeps a union's branches apart up to this many (see _Compiler.entities);
# past it they are one UNION group again, so the query stays small.
MAX_BRANCHES = 16


@dataclass
class Frag:
    """A step's entities in ``var``: one group pattern per alternative (``alts``; several only
    in dialect ``exists``, where they stand for the UNION of the groups), and the fact that
    reached them, if any (Filter*, Relate), for QFilter*."""
    alts: list[list[str]]
    var: str
    fact: tuple[str, str, str] | None = None
    fact_node: str | None = None

    def add(self, *lines: str) -> "Frag":
        for alt in self.alts:
            alt.extend(lines)
        return self


@dataclass(frozen=True)
class Compiled:
    sparql: str
    kind: str
    """names, count, values, relations or verdict: how :func:`decode` reads the rows."""


class _Compiler:
    def __init__(self, program: Program, kb: KB, dialect: str = "portable"):
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
        self.dialect = dialect
        self.program = program
        self.kb = kb
        self.preds = predicate_map(kb)
        self.counter = itertools.count(1)
        self.finds: set[str] = set()    # the Find patterns written (see ordered())

    def fresh(self, stem: str) -> str:
        return f"?{stem}{next(self.counter)}"

    def pred(self, name: str) -> str:
        return f"<{self.preds[name]}>" if name in self.preds else f"<{BASE}{name}>"

    # ---- value conditions -----------------------------------------------------------------
    def cond(self, node: str, target: Value, op: str) -> list[str]:
        """Patterns that hold when the value node ``node`` compares ``op`` with ``target``;
        in dialect ``exists`` one triple pattern per line, each starting from ``node`` (see
        :meth:`exists`)."""
        if target.type == "string":
            assert op == "=", "strings compare for equality only (the type checker's rule)"
            return [f"{node} {VALUE} {literal(target.value)} ."]
        if target.type == "quantity":
            x = self.fresh("x")
            if self.dialect == "portable":
                return [f"{node} {UNIT} {literal(target.unit)} ; {VALUE} {x} .",
                        f"FILTER({x} {op} {_double(target.value)})"]
            return [f"{node} {UNIT} {literal(target.unit)} .", f"{node} {VALUE} {x} .",
                    f"FILTER({x} {op} {_double(target.value)})"]
        # Equality with a year or a date is a triple pattern with the constant, not a FILTER:
        # the same answers (our Turtle writes every year and date in canonical form), and
        # Oxigraph plans FILTER(?d = const) inside EXISTS 10-30x slower.
        if target.type == "year":
            if op == "=":
                return [f"{node} {YEAR} {target.value} ."]
            y = self.fresh("y")
            return [f"{node} {YEAR} {y} .", f"FILTER({y} {op} {target.value})"]
        d, y = self.fresh("d"), self.fresh("y")
        day = _date(target)
        if op == "=":
            return [f"{node} {DATE} {day} ."]
        lines = [f"{node} {YEAR} {y} .", f"OPTIONAL {{ {node} {DATE} {d} }}"]
        if op == "!=":
            return lines + [f"FILTER(!BOUND({d}) || {d} != {day})"]
        return lines + [f"FILTER((BOUND({d}) && {d} {op} {day}) || "
                        f"(!BOUND({d}) && {y} {op} {target.value[0]}))"]

    def exists(self, lines: list[str]) -> str:
        """A value test. Dialect ``exists``: ``FILTER EXISTS``, evaluated for each solution
        with its node bound, so a test never multiplies the rest of the pattern (joined,
        chains of tests with OPTIONALs made Oxigraph's plans explode: seconds per query).
        Dialect ``portable``: joined (Virtuoso 7 answers some correlated EXISTS wrongly).

        In dialect ``exists`` a test of several triple patterns is a chain of EXISTS, one
        triple pattern each, in the order given (each starts from a node the enclosing one
        bound): Oxigraph (0.5) plans the group inside an EXISTS as if the outer solution's
        variables were unbound, so ``EXISTS { ?f <qualifier> ?q . ?q <pred:year> 1962 }``
        scanned every node of year 1962 for each solution (11,000 at scale 10: 12 ms per
        program), while a single pattern is looked up with the outer bindings substituted
        (0.7 ms). The same test: EXISTS of a join = EXISTS of the first pattern with EXISTS
        of the rest inside it. Filters and OPTIONALs go into the innermost group, where every
        variable is in scope."""
        if self.dialect != "exists":
            return " ".join(lines)
        triples = [ln for ln in lines if not ln.startswith(("FILTER", "OPTIONAL"))]
        inner = " ".join([triples[-1]] + [ln for ln in lines if ln.startswith(("FILTER", "OPTIONAL"))])
        for triple in reversed(triples[:-1]):
            inner = f"{triple} FILTER EXISTS {{ {inner} }}"
        return f"FILTER EXISTS {{ {inner} }}"

    def value_fields(self, node: str) -> list[str]:
        # STR(): Virtuoso writes an xsd:double result with 6 significant digits
        # (9695328 -> 9.69533e+06); the string of the value keeps them all
        if self.dialect == "portable":
            return [f"OPTIONAL {{ {node} {VALUE} ?v0 . BIND(STR(?v0) AS ?val) }}", f"OPTIONAL {{ {node} {UNIT} ?unit }}",
                    f"OPTIONAL {{ {node} {YEAR} ?year }}", f"OPTIONAL {{ {node} {DATE} ?date }}"]
        # Dialect exists: the four kinds of value node (string: value; quantity: value and
        # unit; year: year; date: year and date -- kqapro.rdf writes no other) as a UNION of
        # joins, which gives the rows the OPTIONALs give. Oxigraph turns an OPTIONAL into a
        # lookup per solution only when its estimate of the rest of the pattern is not too
        # large; after a long chain the estimate saturates and each OPTIONAL became a hash
        # join over every value node of the store (600 ms for one QueryAttr at 17,000
        # entities); a UNION of joins is looked up per solution whatever the estimate (1 ms).
        u, d = self.fresh("u"), self.fresh("d")
        return [f"{{ {node} {VALUE} ?v0 . FILTER NOT EXISTS {{ {node} {UNIT} {u} }} BIND(STR(?v0) AS ?val) }} "
                f"UNION {{ {node} {VALUE} ?v0 . {node} {UNIT} ?unit . BIND(STR(?v0) AS ?val) }} "
                f"UNION {{ {node} {YEAR} ?year . FILTER NOT EXISTS {{ {node} {DATE} {d} }} }} "
                f"UNION {{ {node} {YEAR} ?year . {node} {DATE} ?date }}"]

    def key_type(self, key: str) -> str:
        kind = self.kb.key_type(key)
        return "string" if kind in (None, "mixed") else kind

    def fact_node(self, frag: Frag) -> str:
        if frag.fact_node is None:
            h, r, t = frag.fact
            f = frag.fact_node = self.fresh("f")
            frag.add(f"{f} {FACT_H} {h} ; {FACT_R} {r} ; {FACT_T} {t} .")
        return frag.fact_node

    # ---- entity fragments -------------------------------------------------------------------
    def entities(self, i: int, var: str | None = None) -> Frag:
        step = self.program.steps[i]
        name, args = step.function, step.inputs
        v = var or self.fresh("e")
        deps = step.dependencies
        if name == "FindAll":
            return Frag([[f"{v} a <{ENTITY.value}> ."]], v)
        if name == "Find":
            line = f"{v} {NAME} {literal(args[0])} ; a <{ENTITY.value}> ."
            self.finds.add(line)
            return Frag([[line]], v)
        if name == "FilterConcept":
            frag = self.entities(deps[0], v)
            c = self.fresh("c")
            return Frag(frag.add(f"{v} {INSTANCE} {c} . {c} {NAME} {literal(args[0])} .").alts, v)
        if name.startswith("Filter"):
            f = FUNCTIONS[name]
            frag = self.entities(deps[0], v)
            node, key = self.fresh("n"), self.pred(args[0])
            op = args[2] if len(args) > 2 else "="
            frag.add(f"{v} {key} {node} .", self.exists(self.cond(node, Value.parse(args[1], f.value_type), op)))
            return Frag(frag.alts, v, (v, key, node))
        if name.startswith("QFilter"):
            f = FUNCTIONS[name]
            frag = self.entities(deps[0], v)
            fnode, q = self.fact_node(frag), self.fresh("q")
            op = args[2] if len(args) > 2 else "="
            return frag.add(self.exists([f"{fnode} {self.pred(args[0])} {q} ."]
                                        + self.cond(q, Value.parse(args[1], f.value_type), op)))
        if name == "Relate":
            frag = self.entities(deps[0])
            u, r = frag.var, self.pred(args[0])
            if args[1] == "forward":
                return Frag(frag.add(f"{u} {r} {v} .").alts, v, (u, r, v))
            return Frag(frag.add(f"{v} {r} {u} .").alts, v, (v, r, u))
        if name in ("And", "Or"):
            if self.dialect == "portable":
                a, b = (self.subquery(d, v) for d in deps)
                if name == "And":
                    return Frag([[a, b]], v)
                return Frag([[f"{{ {{ {a} }} UNION {{ {b} }} }}"]], v)
            # Dialect exists: the operands inline (their variables are fresh, so the join is
            # the same; a sub-query is evaluated apart by Oxigraph and hash-joined with the
            # rest of the pattern, unbound: QueryRelation on two Finds took 60 ms at 17,000
            # entities, 0.3 ms inline), and a union's branches kept apart: every later
            # pattern is added to each branch (a join distributes over a union, multiplicities
            # included). Oxigraph has no statistics and estimates a UNION as the sum of its
            # branches' chains, so a pattern joined with it -- `?e <key> ?n` after Or, the
            # value patterns of SelectBetween -- looked smaller and was evaluated first, for
            # every entity with the key (SelectBetween of two Finds: 2.7 s at 170,000
            # entities); inside each branch it starts from the branch's Find or concept.
            a, b = (self.entities(d, v) for d in deps)
            if name == "And":
                return Frag(self.branches([x + y for x in a.alts for y in b.alts]), v)
            return Frag(self.branches(a.alts + b.alts), v)
        raise AssertionError(name)

    def branches(self, alts: list[list[str]]) -> list[list[str]]:
        """Alternatives, or one UNION group when there are more than MAX_BRANCHES."""
        return alts if len(alts) <= MAX_BRANCHES else [[self.union(alts)]]

    def union(self, alts: list[list[str]]) -> str:
        return " UNION ".join(f"{{ {' '.join(self.ordered(alt))} }}" for alt in alts)

    def render(self, alts: list[list[str]], *rest: str) -> str:
        """The group pattern: ``rest`` joined to every alternative; several alternatives are
        the UNION of their groups."""
        if len(alts) == 1:
            return " ".join(self.ordered(alts[0]) + list(rest))
        return self.union([self.ordered(alt) + list(rest) for alt in alts])

    def ordered(self, alt: list[str]) -> list[str]:
        """Dialect ``exists``: a branch's Find patterns first. Oxigraph orders a join greedily
        from the pattern it estimates smallest, without statistics, and among equal estimates
        takes the first written: a Find's name and a concept's name look alike to it, but a
        name finds one entity where a concept has up to thousands of members (And of a
        concept and a Find's neighbours: 500 ms started from the concept, 0.5 ms from the
        Find). The lines of a branch are triple patterns, FILTERs and UNION groups, whose
        order does not change the answers."""
        if self.dialect != "exists":
            return alt
        return [ln for ln in alt if ln in self.finds] + [ln for ln in alt if ln not in self.finds]

    def operand(self, i: int, var: str) -> list[list[str]]:
        """Step ``i``'s entities bound to ``var``, as the input of an aggregate or an answer:
        alternatives to which the consumer adds its patterns (:meth:`render`).

        Portable: a ``SELECT DISTINCT`` sub-query, so no multiplicity leaks out. ``exists``:
        the pattern itself, its union branches apart (see :meth:`entities`, And/Or)."""
        if self.dialect == "exists":
            return self.entities(i, var).alts
        return [[self.subquery(i, var)]]

    def subquery(self, i: int, var: str) -> str:
        """Step ``i``'s entities bound to ``var`` as a ``SELECT DISTINCT`` sub-query (dialect
        portable: And/Or operands and the inputs of aggregates)."""
        frag = self.entities(i, var)
        return f"{{ SELECT DISTINCT {var} WHERE {{ {self.render(frag.alts)} }} }}"

    # ---- values fragments (for value answers and Verify) --------------------------------------
    def values(self, i: int) -> tuple[list[list[str]], str]:
        """The value nodes step ``i`` gives: alternatives binding ``node``, and ``node``."""
        step = self.program.steps[i]
        name, args, deps = step.function, step.inputs, step.dependencies
        if name == "QueryRelationQualifier":
            a, b = self.fresh("e"), self.fresh("e")
            r, f, q = self.pred(args[0]), self.fresh("f"), self.fresh("q")
            rest = [f"{a} {r} {b} .", f"{f} {FACT_H} {a} ; {FACT_R} {r} ; {FACT_T} {b} .",
                    f"{f} {self.pred(args[1])} {q} ."]
            return [x + y + rest for x in self.operand(deps[0], a) for y in self.operand(deps[1], b)], q
        e = self.fresh("e")
        alts = self.operand(deps[0], e)
        node, key = self.fresh("n"), self.pred(args[0])
        rest = [f"{e} {key} {node} ."]
        if name == "QueryAttr":
            return [alt + rest for alt in alts], node
        f, q = self.fresh("f"), self.fresh("q")
        fact = f"{f} {FACT_H} {e} ; {FACT_R} {key} ; {FACT_T} {node} ."
        if name == "QueryAttrUnderCondition":
            target = Value.parse(args[2], self.key_type(args[1]))
            rest += [fact, self.exists([f"{f} {self.pred(args[1])} {q} ."] + self.cond(q, target, "="))]
        elif name == "QueryAttrQualifier":
            target = Value.parse(args[1], self.key_type(args[0]))
            rest += [self.exists(self.cond(node, target, "=")), fact, f"{f} {self.pred(args[2])} {q} ."]
            node = q
        else:
            raise AssertionError(name)
        return [alt + rest for alt in alts], node

    # ---- the final step ----------------------------------------------------------------------
    def select(self, deps, key: str, largest: bool) -> str:
        e = "?sel"
        k = self.pred(key)
        agg = "MAX" if largest else "MIN"
        if self.dialect == "exists":
            # the candidates' union branches apart (see entities(), And/Or), and the unit vote
            # and the best value in one grouped sub-query: one pass over the candidates fewer
            alts = self.branches([alt for d in deps for alt in self.entities(d, e).alts])
            n1, x1, n3, x3, u3 = (self.fresh(stem) for stem in ("n", "x", "n", "x", "u"))
            return (
                "SELECT DISTINCT ?name WHERE { "
                f"{{ SELECT ?u ({agg}({x1}) AS ?best) WHERE {{ "
                f"{self.render(alts, f'{e} {k} {n1} .', f'{n1} {UNIT} ?u ; {VALUE} {x1} .')} }} "
                f"GROUP BY ?u ORDER BY DESC(COUNT(DISTINCT {n1})) ?u LIMIT 1 }} "
                # the unit compared with sameTerm, not joined: joined, Oxigraph starts from every
                # node with that unit (?u is bound by the sub-query): 14 ms instead of 0.6
                f"{self.render(alts, f'{e} {k} {n3} .', f'{n3} {UNIT} {u3} ; {VALUE} {x3} .', f'{e} {NAME} ?name .')} "
                f"FILTER(sameTerm({u3}, ?u) && {x3} = ?best) }}")
        if len(deps) == 2:
            a, b = (self.subquery(d, e) for d in deps)
            source = f"{{ SELECT DISTINCT {e} WHERE {{ {{ {a} }} UNION {{ {b} }} }} }}"

            def candidates() -> str:
                return source
        else:
            def candidates() -> str:
                return self.subquery(deps[0], e)
        n1, x1, n2, x2, n3, x3, u3 = (self.fresh(stem) for stem in ("n", "x", "n", "x", "n", "x", "u"))
        return (
            "SELECT DISTINCT ?name WHERE { "
            f"{{ SELECT ?u WHERE {{ {candidates()} {e} {k} {n1} . {n1} {UNIT} ?u ; {VALUE} {x1} . }} "
            f"GROUP BY ?u ORDER BY DESC(COUNT(DISTINCT {n1})) ?u LIMIT 1 }} "
            f"{{ SELECT ?u ({agg}({x2}) AS ?best) WHERE {{ {candidates()} {e} {k} {n2} . "
            f"{n2} {UNIT} ?u ; {VALUE} {x2} . }} GROUP BY ?u }} "
            # the unit compared with sameTerm, not joined (see above)
            f"{candidates()} {e} {k} {n3} . {n3} {UNIT} {u3} ; {VALUE} {x3} . "
            f"FILTER(sameTerm({u3}, ?u) && {x3} = ?best) {e} {NAME} ?name . }}")

    def compile(self) -> Compiled:
        last = len(self.program.steps) - 1
        step = self.program.steps[last]
        name, args, deps = step.function, step.inputs, step.dependencies
        if name == "What":
            body = self.render(self.entities(deps[0], "?e").alts, f"?e {NAME} ?name .")
            return Compiled(f"SELECT DISTINCT ?name WHERE {{ {body} }}", "names")
        if name == "Count":
            body = self.render(self.entities(deps[0], "?e").alts)
            return Compiled(f"SELECT (COUNT(DISTINCT ?e) AS ?count) WHERE {{ {body} }}", "count")
        if name == "SelectAmong":
            return Compiled(self.select(deps, args[0], args[1] == "largest"), "names")
        if name == "SelectBetween":
            return Compiled(self.select(deps, args[0], args[1] == "greater"), "names")
        if name == "QueryRelation":
            alts = [x + y for x in self.operand(deps[0], "?a") for y in self.operand(deps[1], "?b")]
            body = self.render(alts, "?a ?p ?b .", f"?p a <{RELATION.value}> ; <{RDFS}label> ?label .")
            return Compiled(f"SELECT DISTINCT ?label WHERE {{ {body} }}", "relations")
        if name.startswith("Verify"):
            f = FUNCTIONS[name]
            alts, node = self.values(deps[0])
            target = Value.parse(args[0], f.value_type)
            op = args[1] if len(args) > 1 else "="
            # COUNT(*) counts a value once per branch it is reached in: the verdict compares
            # the two counts only with each other and with zero, so repeats do not matter
            passing = self.render(alts, self.exists(self.cond(node, target, op)))
            return Compiled(f"SELECT ?hits ?all WHERE {{ {{ SELECT (COUNT(*) AS ?hits) WHERE {{ {passing} }} }} "
                            f"{{ SELECT (COUNT(*) AS ?all) WHERE {{ {self.render(alts)} }} }} }}", "verdict")
        alts, node = self.values(last)
        return Compiled(f"SELECT DISTINCT {' '.join('?' + v for v in VALUE_VARS)} WHERE {{ "
                        f"{self.render(alts, *self.value_fields(node))} }}", "values")


def compile_program(program: Program, kb: KB, dialect: str = "portable") -> Compiled:
    """The program as one SPARQL query on the KB's RDF (type-checked first).

    ``dialect``: ``portable`` (value tests joined into the pattern; every engine, Virtuoso 7
    included) or ``exists`` (value tests as ``FILTER EXISTS``; faster on Oxigraph and Jena)."""
    check(program, kb)
    return _Compiler(program, kb, dialect).compile()


# ---- reading the answer back -------------------------------------------------------------------

_DATE = re.compile(r"^\+?(-?\d+)-(\d\d)-(\d\d)")


def _value_of(row: dict) -> Value:
    if row.get("date"):
        # engines may add a time zone or a time to an xsd:date
        match = _DATE.match(row["date"])
        return Value.date((int(match[1]), int(match[2]), int(match[3])))
    if row.get("year") is not None:
        return Value.year(int(row["year"]))
    if row.get("unit") is not None:
        number = float(row["val"])
        return Value.quantity(number, row["unit"])
    return Value.string(row.get("val") or "")


def decode(kind: str, rows: list[dict]) -> Answer:
    """An answer from result rows: each row maps a variable name to its lexical value."""
    if kind == "names":
        return Answer.of("names", (r["name"] for r in rows if r.get("name") is not None))
    if kind == "relations":
        return Answer.of("relations", (r["label"] for r in rows if r.get("label") is not None))
    if kind == "count":
        return Answer.count(int(float(rows[0]["count"])) if rows else 0)
    if kind == "verdict":
        hits = int(float(rows[0]["hits"])) if rows else 0
        total = int(float(rows[0]["all"])) if rows else 0
        return Answer.verdict("yes" if total and hits == total else "no" if hits == 0 else "not sure")
    return Answer.of("values", (_value_of(r).text() for r in rows))


__all__ = ["Compiled", "DIALECTS", "compile_program", "decode", "literal"]
