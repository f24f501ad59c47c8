"""The work of one scale: template programs with random slots (:func:`template_texts`),
random well-typed programs (:class:`RandomPrograms`), the whole-country scans
(:data:`SCAN_SHAPES`), the gold batch and the EV-TC questions (:func:`make_workload`).

The native worker draws it from its own index, once per scale, and writes it to a JSON
file every other worker reads, so that every engine sees exactly the same programs.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

from kopl2sparql.errors import SynKQAError


# ---- the work ----------------------------------------------------------------------------------

SCAN_SHAPES = {
    "people born in a country": "Find({c});RelateInv(located_in);RelateInv(born_in);Count()",
    "people working in a country": "Find({c});RelateInv(located_in);RelateInv(headquarters_in);"
                                   "RelateInv(works_at);Count()",
    "colleagues of a country's natives": "Find({c});RelateInv(located_in);RelateInv(born_in);"
                                         "Relate(works_at);RelateInv(works_at);Count()",
    "oldest native of a country": "Find({c});RelateInv(located_in);RelateInv(born_in);"
                                  "Argmin(birth_year);QueryName()",
}
"""The widest programs the language reaches: every class scales with the KB, so these
read the same share of it (about 50 people per country) at every scale; the language has
no operator that reads a whole class at once."""


def template_texts(template, index, n: int, rng: random.Random) -> list[str]:
    """``n`` program texts of ``template`` with slots drawn from the KB.

    WorkAndBornIntersection takes both slots from one person (a non-empty intersection, as
    the benchmark does); VerifyEmployment takes the person's own employer half of the time
    (so both answers occur); CompareCityPopulation two different cities.
    """
    out = []
    people = index.members["Person"]
    for _ in range(n):
        if template.name == "WorkAndBornIntersection":
            person = rng.choice(people)
            slots = {"Org": _one(index.forward["works_at"][person]), "City": _one(index.forward["born_in"][person])}
        elif template.name == "VerifyEmployment":
            person = rng.choice(people)
            org = (_one(index.forward["works_at"][person]) if rng.random() < 0.5
                   else rng.choice(index.members["Organization"]))
            slots = {"Person": person, "Org": org}
        elif template.name == "CompareCityPopulation":
            a, b = rng.sample(index.members["City"], 2)
            slots = {"City1": a, "City2": b}
        else:
            slots = {name: rng.choice(index.members[cls]) for name, cls in template.slots}
        out.append(template.program_text(**slots))
    return out


def _one(values) -> str:
    return min(values)


class RandomPrograms:
    """Random well-typed programs over the schema (any operator, nesting up to ``depth``).

    Relations are followed along their domain and range, attributes only on their class,
    numbers are values the KB has (±0 or 1), so the type checker accepts every program; a
    program may still fail at run time (QueryAttr of several entities), which both engines
    must report alike.
    """

    def __init__(self, index, rng: random.Random, depth: int = 3):
        from ontology import Schema, schema_path

        self.index, self.rng, self.depth = index, rng, depth
        sch = Schema.from_turtle(schema_path())          # the SynKQA-Pro vocabulary
        self.relations = list(sch.relations.values())
        self.attributes = list(sch.attributes.values())
        self.values = {a.name: sorted(set(index.values[a.name].values())) for a in self.attributes}
        self.classes = [c for c in sch.classes if index.members.get(c)]

    def entity(self, cls: str) -> str:
        return self.rng.choice(self.index.members[cls])

    def set_of(self, cls: str, depth: int) -> list[str]:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            return [f"Find({self.entity(cls)})"]
        choices = ["relate", "inv", "and", "or", "diff", "select", "filter"]
        kind = rng.choice(choices)
        if kind == "relate":
            rels = [r for r in self.relations if r.range == cls]
            if rels:
                r = rng.choice(rels)
                return self.set_of(r.domain, depth - 1) + [f"Relate({r.name})"]
        if kind == "inv":
            rels = [r for r in self.relations if r.domain == cls]
            if rels:
                r = rng.choice(rels)
                return self.set_of(r.range, depth - 1) + [f"RelateInv({r.name})"]
        if kind in ("and", "or", "diff"):
            op = {"and": "And", "or": "Or", "diff": "Diff"}[kind]
            return self.set_of(cls, depth - 1) + self.set_of(cls, depth - 1) + [f"{op}()"]
        attrs = [a for a in self.attributes if a.domain == cls]
        if attrs and kind == "select":
            a = rng.choice(attrs)
            return self.set_of(cls, depth - 1) + [f"{rng.choice(('Argmax', 'Argmin'))}({a.name})"]
        if attrs and kind == "filter":
            a = rng.choice(attrs)
            return self.set_of(cls, depth - 1) + [f"FilterNum({a.name},{rng.choice(('>', '<', '>=', '<=', '=', '!='))},"
                                                  f"{self.number(a.name)})"]
        return [f"Find({self.entity(cls)})"]

    def number(self, attribute: str) -> str:
        from kopl2sparql.answer import format_number

        value = self.rng.choice(self.values[attribute])
        return format_number(value + self.rng.choice((0, 0, 1, -1)))

    def number_of(self, depth: int) -> list[str]:
        cls = self.rng.choice(self.classes)
        if self.rng.random() < 0.5:
            return self.set_of(cls, depth) + ["Count()"]
        attrs = [a for a in self.attributes if a.domain == cls] or self.attributes
        a = self.rng.choice(attrs)
        return self.set_of(a.domain, depth) + [f"QueryAttr({a.name})"]

    def program(self) -> str:
        rng = self.rng
        depth = rng.randint(1, self.depth)
        top = rng.choice(("names", "names", "number", "bool", "bool"))
        if top == "names":
            steps = self.set_of(rng.choice(self.classes), depth) + ["QueryName()"]
        elif top == "number":
            steps = self.number_of(depth)
        else:
            kind = rng.choice(("compare", "verifynum", "verifyrel"))
            if kind == "compare":
                steps = self.number_of(depth - 1) + self.number_of(depth - 1) + [
                    f"Compare({rng.choice(('>', '<', '>=', '<=', '=', '!='))})"]
            elif kind == "verifynum":
                number = self.number_of(depth)
                bound = str(rng.randint(0, 60)) if number[-1] == "Count()" else self.number(
                    number[-1][len("QueryAttr("):-1])
                steps = number + [f"VerifyNum({rng.choice(('>', '<', '>=', '<=', '=', '!='))},{bound})"]
            else:
                r = rng.choice(self.relations)
                steps = self.set_of(r.domain, depth) + [f"VerifyRel({r.name},{self.entity(r.range)})"]
        return ";".join(steps)


def kb_entities(index):
    """What slot sampling and options need (:class:`synkqa.benchmark.dataset.KBEntities`), from the index."""
    from synkqa.benchmark.dataset import KBEntities

    employer = {p: _one(o) for p, o in index.forward["works_at"].items()}
    birth_city = {p: _one(c) for p, c in index.forward["born_in"].items()}
    names = {cls: tuple(members) for cls, members in index.members.items() if members}
    return KBEntities(names, employer, birth_city)


def make_workload(index, native, scale: int, sizes: dict[str, int], seed: int, kb_seed: int,
                  run_dir: Path) -> dict:
    """Every program of one scale, drawn from ``index`` with ``random.Random(seed)``.

    Also trains the EV-TC ranker (TC on ``evtc_train`` train questions) and writes it to
    ``run_dir``; the EV-TC questions get their gold answer from ``native`` and ten options.
    """
    from kopl2sparql.syntax import parse
    from synkqa.benchmark.dataset import make_choices, sample_split
    from synkqa.benchmark.templates import templates

    rng = random.Random(f"bench-{seed}-{scale}")
    work: dict[str, Any] = {"scale": scale}
    work["templates"] = {t.name: template_texts(t, index, sizes["templates"], rng) for t in templates()}
    generator = RandomPrograms(index, rng)
    random_texts: dict[str, None] = {}
    tries = 0
    while len(random_texts) < sizes["random"] and tries < 20 * sizes["random"] + 100:
        tries += 1
        random_texts.setdefault(generator.program())
    work["random"] = list(random_texts)
    countries = index.members["Country"]
    picks = [rng.choice(countries) for _ in range(sizes["scans"])]
    work["scans"] = {name: [shape.format(c=c) for c in picks] for name, shape in SCAN_SHAPES.items()}
    kb = kb_entities(index)
    batch: list[str] = []
    if sizes["batch"]:
        from synkqa.benchmark.dataset import SPLIT_SIZES

        for split in ("train", "validation", "test"):
            want = min(SPLIT_SIZES[split], sizes["batch"] - len(batch))
            if want <= 0:
                break
            batch += [d.kopl for d in sample_split(kb, split, seed=kb_seed, size=want)]
    work["batch"] = batch
    work["evtc"] = None
    if sizes["evtc"]:
        from parsers.template import TemplateClassifier

        train = sample_split(kb, "train", seed=kb_seed, size=max(sizes["evtc_train"], 200))
        model = TemplateClassifier(random_state=seed).fit([d.question for d in train],
                                                          [d.template.id for d in train])
        model_path = run_dir / f"tc-scale{scale}.pkl"
        with open(model_path, "wb") as handle:
            pickle.dump(model, handle, protocol=pickle.HIGHEST_PROTOCOL)
        options_rng = random.Random(f"bench-options-{seed}-{scale}")
        questions = []
        for draft in sample_split(kb, "test", seed=kb_seed, size=sizes["evtc"]):
            try:
                gold = native.execute(parse(draft.kopl))
                choices = make_choices(gold, kb, options_rng)
            except SynKQAError:
                continue                      # an empty answer has no options; not a question
            questions.append({"id": draft.id, "question": draft.question, "choices": choices,
                              "gold": gold.canonical(), "kopl": draft.kopl})
        work["evtc"] = {"model": str(model_path), "questions": questions, "train": len(train)}
    return work
