"""Full KoPL -> SPARQL 1.1 over KQA Pro's RDF model (:mod:`kqapro.rdf`).

One query per program. A step that gives entities becomes a group pattern binding one
entity variable; Filter* and Relate also remember the fact that reached each entity (head,
predicate, tail), so QFilter* can find the fact node (``pred:fact_h/r/t``) and test its
qualifiers -- chained QFilters test the same fact node, as ``kopl`` tests the same fact.
And/Or operands and the inputs of aggregates are ``SELECT DISTINCT`` sub-queries, so
intermediate multiplicities never multiply.

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


@dataclass
class Frag:
    lines: list[str]
    var: str
    fact: tuple[str, str, str] | None = None
    fact_node: str | None = None


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

    def fresh(self, stem: str) -> str:
        return f"?{stem}{next(self.counter)}"

    def pred(self, name: str) -> str:
        return f"<{self.preds[name]}>" if name in self.preds else f"<{BASE}{name}>"

    # ---- value conditions -----------------------------------------------------------------
    def cond(self, node: str, target: Value, op: str) -> list[str]:
        """Patterns that hold when the value node ``node`` compares ``op`` with ``target``."""
        if target.type == "string":
            assert op == "=", "strings compare for equality only (the type checker's rule)"
            return [f"{node} {VALUE} {literal(target.value)} ."]
        if target.type == "quantity":
            x = self.fresh("x")
            return [f"{node} {UNIT} {literal(target.unit)} ; {VALUE} {x} .",
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
        Dialect ``portable``: joined (Virtuoso 7 answers some correlated EXISTS wrongly)."""
        if self.dialect == "exists":
            return f"FILTER EXISTS {{ {' '.join(lines)} }}"
        return " ".join(lines)

    def value_fields(self, node: str) -> list[str]:
        # STR(): Virtuoso writes an xsd:double result with 6 significant digits
        # (9695328 -> 9.69533e+06); the string of the value keeps them all
        return [f"OPTIONAL {{ {node} {VALUE} ?v0 . BIND(STR(?v0) AS ?val) }}", f"OPTIONAL {{ {node} {UNIT} ?unit }}",
                f"OPTIONAL {{ {node} {YEAR} ?year }}", f"OPTIONAL {{ {node} {DATE} ?date }}"]

    def key_type(self, key: str) -> str:
        kind = self.kb.key_type(key)
        return "string" if kind in (None, "mixed") else kind

    def fact_node(self, frag: Frag) -> str:
        if frag.fact_node is None:
            h, r, t = frag.fact
            f = frag.fact_node = self.fresh("f")
            frag.lines.append(f"{f} {FACT_H} {h} ; {FACT_R} {r} ; {FACT_T} {t} .")
        return frag.fact_node

    # ---- entity fragments -------------------------------------------------------------------
    def entities(self, i: int, var: str | None = None) -> Frag:
        step = self.program.steps[i]
        name, args = step.function, step.inputs
        v = var or self.fresh("e")
        deps = step.dependencies
        if name == "FindAll":
            return Frag([f"{v} a <{ENTITY.value}> ."], v)
        if name == "Find":
            return Frag([f"{v} {NAME} {literal(args[0])} ; a <{ENTITY.value}> ."], v)
        if name == "FilterConcept":
            frag = self.entities(deps[0], v)
            c = self.fresh("c")
            frag.lines.append(f"{v} {INSTANCE} {c} . {c} {NAME} {literal(args[0])} .")
            return Frag(frag.lines, v)
        if name.startswith("Filter"):
            f = FUNCTIONS[name]
            frag = self.entities(deps[0], v)
            node, key = self.fresh("n"), self.pred(args[0])
            op = args[2] if len(args) > 2 else "="
            frag.lines += [f"{v} {key} {node} .", self.exists(self.cond(node, Value.parse(args[1], f.value_type), op))]
            return Frag(frag.lines, v, (v, key, node))
        if name.startswith("QFilter"):
            f = FUNCTIONS[name]
            frag = self.entities(deps[0], v)
            fnode, q = self.fact_node(frag), self.fresh("q")
            op = args[2] if len(args) > 2 else "="
            frag.lines.append(self.exists([f"{fnode} {self.pred(args[0])} {q} ."]
                                          + self.cond(q, Value.parse(args[1], f.value_type), op)))
            return frag
        if name == "Relate":
            frag = self.entities(deps[0])
            u, r = frag.var, self.pred(args[0])
            if args[1] == "forward":
                return Frag(frag.lines + [f"{u} {r} {v} ."], v, (u, r, v))
            return Frag(frag.lines + [f"{v} {r} {u} ."], v, (v, r, u))
        if name in ("And", "Or"):
            a, b = (self.subquery(d, v) for d in deps)
            if name == "And":
                return Frag([a, b], v)
            return Frag([f"{{ {{ {a} }} UNION {{ {b} }} }}"], v)
        raise AssertionError(name)

    def subquery(self, i: int, var: str) -> str:
        """Step ``i``'s entities bound to ``var``, as an operand of And/Or or an aggregate.

        Portable: a ``SELECT DISTINCT`` sub-query, so no multiplicity leaks out. ``exists``:
        the pattern itself (its variables are fresh, so joining it in is the same): Oxigraph
        evaluates a sub-query apart and hash-joins the rest of the pattern, unbound, with it
        (QueryRelation on two Finds took 60 ms at 17,000 entities, 0.3 ms inline)."""
        frag = self.entities(i, var)
        if self.dialect == "exists":
            return " ".join(frag.lines)
        return f"{{ SELECT DISTINCT {var} WHERE {{ {' '.join(frag.lines)} }} }}"

    # ---- values fragments (for value answers and Verify) --------------------------------------
    def values(self, i: int) -> tuple[list[str], str]:
        step = self.program.steps[i]
        name, args, deps = step.function, step.inputs, step.dependencies
        if name == "QueryRelationQualifier":
            a, b = self.fresh("e"), self.fresh("e")
            r, f, q = self.pred(args[0]), self.fresh("f"), self.fresh("q")
            return [self.subquery(deps[0], a), self.subquery(deps[1], b), f"{a} {r} {b} .",
                    f"{f} {FACT_H} {a} ; {FACT_R} {r} ; {FACT_T} {b} .",
                    f"{f} {self.pred(args[1])} {q} ."], q
        e = self.fresh("e")
        lines = [self.subquery(deps[0], e)]
        node, key = self.fresh("n"), self.pred(args[0])
        lines.append(f"{e} {key} {node} .")
        if name == "QueryAttr":
            return lines, node
        f, q = self.fresh("f"), self.fresh("q")
        fact = f"{f} {FACT_H} {e} ; {FACT_R} {key} ; {FACT_T} {node} ."
        if name == "QueryAttrUnderCondition":
            target = Value.parse(args[2], self.key_type(args[1]))
            return lines + [fact, self.exists([f"{f} {self.pred(args[1])} {q} ."] + self.cond(q, target, "="))], node
        if name == "QueryAttrQualifier":
            target = Value.parse(args[1], self.key_type(args[0]))
            return lines + [self.exists(self.cond(node, target, "=")), fact, f"{f} {self.pred(args[2])} {q} ."], q
        raise AssertionError(name)

    # ---- the final step ----------------------------------------------------------------------
    def select(self, deps, key: str, largest: bool) -> str:
        e = "?sel"
        if len(deps) == 2:
            a, b = (self.subquery(d, e) for d in deps)
            source = f"{{ SELECT DISTINCT {e} WHERE {{ {{ {a} }} UNION {{ {b} }} }} }}"

            def candidates() -> str:
                return source
        else:
            def candidates() -> str:
                return self.subquery(deps[0], e)
        k = self.pred(key)
        agg = "MAX" if largest else "MIN"
        # fresh names: inlined candidate patterns (dialect exists) share the query's scope
        n1, x1, n2, x2, n3, x3, u3 = (self.fresh(stem) for stem in ("n", "x", "n", "x", "n", "x", "u"))
        return (
            "SELECT DISTINCT ?name WHERE { "
            f"{{ SELECT ?u WHERE {{ {candidates()} {e} {k} {n1} . {n1} {UNIT} ?u ; {VALUE} {x1} . }} "
            f"GROUP BY ?u ORDER BY DESC(COUNT(DISTINCT {n1})) ?u LIMIT 1 }} "
            f"{{ SELECT ?u ({agg}({x2}) AS ?best) WHERE {{ {candidates()} {e} {k} {n2} . "
            f"{n2} {UNIT} ?u ; {VALUE} {x2} . }} GROUP BY ?u }} "
            # the unit compared with sameTerm, not joined: joined, Oxigraph starts from every
            # node with that unit (?u is bound by the sub-query): 14 ms instead of 0.6
            f"{candidates()} {e} {k} {n3} . {n3} {UNIT} {u3} ; {VALUE} {x3} . "
            f"FILTER(sameTerm({u3}, ?u) && {x3} = ?best) {e} {NAME} ?name . }}")

    def compile(self) -> Compiled:
        last = len(self.program.steps) - 1
        step = self.program.steps[last]
        name, args, deps = step.function, step.inputs, step.dependencies
        if name == "What":
            frag = self.entities(deps[0], "?e")
            return Compiled(f"SELECT DISTINCT ?name WHERE {{ {' '.join(frag.lines)} ?e {NAME} ?name . }}",
                            "names")
        if name == "Count":
            frag = self.entities(deps[0], "?e")
            return Compiled(f"SELECT (COUNT(DISTINCT ?e) AS ?count) WHERE {{ {' '.join(frag.lines)} }}", "count")
        if name == "SelectAmong":
            return Compiled(self.select(deps, args[0], args[1] == "largest"), "names")
        if name == "SelectBetween":
            return Compiled(self.select(deps, args[0], args[1] == "greater"), "names")
        if name == "QueryRelation":
            a, b = self.subquery(deps[0], "?a"), self.subquery(deps[1], "?b")
            return Compiled(f"SELECT DISTINCT ?label WHERE {{ {a} {b} ?a ?p ?b . "
                            f"?p a <{RELATION.value}> ; <{RDFS}label> ?label . }}", "relations")
        if name.startswith("Verify"):
            f = FUNCTIONS[name]
            lines, node = self.values(deps[0])
            target = Value.parse(args[0], f.value_type)
            op = args[1] if len(args) > 1 else "="
            body = " ".join(lines)
            passing = " ".join(lines + [self.exists(self.cond(node, target, op))])
            return Compiled(f"SELECT ?hits ?all WHERE {{ {{ SELECT (COUNT(*) AS ?hits) WHERE {{ {passing} }} }} "
                            f"{{ SELECT (COUNT(*) AS ?all) WHERE {{ {body} }} }} }}", "verdict")
        lines, node = self.values(last)
        return Compiled(f"SELECT DISTINCT {' '.join('?' + v for v in VALUE_VARS)} WHERE {{ "
                        f"{' '.join(lines + self.value_fields(node))} }}", "values")


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
