"""The ``compositional`` split: questions that combine operators the nine templates never
combine, each with a gold program executed on both engines.

Why a split of its own: the nine templates cover one shape each, so a parser can reach
100 % on them and still fail as soon as a user asks "how many employees of Org_0122 are
over 190 cm tall?". This split asks for what the KoPL subset already expresses and the
templates do not use: ``FilterNum``/``VerifyNum`` with numbers and units from the question,
``Diff`` ("not", "except"), ``Or`` ("or", "either"), counts compared, superlatives over
derived sets, chains of three and four hops, ``VerifyRel`` after hops, three linked
entities, a superlative followed by more hops.

Layout:

- :data:`KINDS` holds 26 composition kinds. A kind is a program skeleton with slots
  (entities ``{P} {C} {K} {O} ...``, numbers ``{N}``/``{Y}``, a variant such as the
  comparator or the superlative's direction), a constructive slot sampler, and five
  wordings; a wording has one sentence per variant.
- Wordings 0 and 1 of every kind are the ``train`` part, wording 2 the ``validation``
  part, wordings 3 and 4 the ``test`` part: the parts share kinds but never a sentence
  shape, so the test part measures *unseen wordings* of known compositions.
- Numbers are round thresholds near each attribute's range, written as digits, with
  thousands separators or with "thousand"/"million", so a parser must read all three.

The split is small (:data:`PER_WORDING` questions per wording and part; about 2,100 in
all) and deterministic: one ``random.Random`` seeded with ``(seed, "compositional")``
draws every slot, in a fixed kind order, from the KB as read from RDF (the native
engine's index), never from the generator's Python objects. Gold answers come from
executing every gold program on the native interpreter and on Oxigraph (SPARQL, batched
per program shape); a difference aborts the build like any other split.

Records carry ``"split": "compositional"``, ``"part"`` (train / validation / test),
``"kind"``, ``"wording"`` (``<kind>/<n>``) and no options: the split is for open-ended use.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import orjson

from kopl2sparql.answer import Answer, format_number
from kopl2sparql.errors import DatasetError, EngineDisagreement, ExecutionError, ProgramError
from kopl2sparql.program import Program, Step

__all__ = ["Kind", "KINDS", "PARTS", "WORDING_PARTS", "PER_WORDING", "FILE", "CompositionalDraft",
           "draw", "build_records", "write", "kind_names", "by_kind"]

FILE = "compositional.jsonl"
PARTS = ("train", "validation", "test")
WORDING_PARTS = {0: "train", 1: "train", 2: "validation", 3: "test", 4: "test"}
"""Which part each wording index belongs to (train and test never share a wording)."""
PER_WORDING = {"train": 20, "validation": 12, "test": 12}
"""Questions per wording in each part: 26 kinds x (2x20 + 12 + 2x12) = 1,976 questions."""


# ---- the KB, as the samplers see it -------------------------------------------------------------

class _World:
    """Adjacency and values from the native engine's :class:`~kopl2sparql.kbindex.KBIndex`
    (read from RDF), in name order so that draws do not depend on set iteration."""

    def __init__(self, index):
        members = index.members
        self.people = tuple(members.get("Person", ()))
        self.cities = tuple(members.get("City", ()))
        self.countries = tuple(members.get("Country", ()))
        self.orgs = tuple(members.get("Organization", ()))
        if not (self.people and self.cities and self.countries and self.orgs):
            raise DatasetError("the compositional split needs Person, City, Country and Organization entities")
        fwd, inv = index.forward, index.inverse

        def one(rel: str) -> dict[str, str]:
            return {s: min(o) for s, o in fwd.get(rel, {}).items() if o}

        def many(rel: str) -> dict[str, tuple[str, ...]]:
            return {o: tuple(sorted(s)) for o, s in inv.get(rel, {}).items()}

        self.employer, self.birth_city = one("works_at"), one("born_in")
        self.hq, self.country_of = one("headquarters_in"), one("located_in")
        self.employees, self.natives = many("works_at"), many("born_in")
        self.orgs_in, self.cities_of = many("headquarters_in"), many("located_in")
        self.values = index.values

    def orgs_in_country(self, country: str) -> tuple[str, ...]:
        return tuple(o for c in self.cities_of.get(country, ()) for o in self.orgs_in.get(c, ()))


# ---- kinds ---------------------------------------------------------------------------------------

Sampler = Callable[[random.Random, _World], "dict[str, str] | None"]


@dataclass(frozen=True)
class Kind:
    """One composition: ``program`` is a skeleton with ``{slot}`` holes; ``variants`` maps a
    variant key (``>``/``<``, ``max``/``min``, ...) to extra program fields; ``wordings[i]``
    maps the same keys to sentences. ``numbers`` names the number slots and how to draw them
    (``slot -> (attribute, thresholds)``)."""

    name: str
    reasoning: str
    program: str
    variants: dict[str, dict[str, str]]
    wordings: tuple[dict[str, str], ...]
    sample: Sampler = field(repr=False)
    numbers: dict[str, tuple[str, tuple[int | str, ...]]] = field(default_factory=dict)
    nonempty: bool = True          # entity answers must be non-empty; counts above zero

    @property
    def hops(self) -> int:
        return sum(self.program.count(op) for op in ("Relate(", "RelateInv(", "VerifyRel("))


GT_LT = {">": {"op": ">"}, "<": {"op": "<"}}
EXTREMES = {"max": {"ext": "Argmax"}, "min": {"ext": "Argmin"}}

HEIGHTS = (165, 170, 175, 180, 185, 190)
YEARS_BORN = (1950, 1960, 1970, 1980, 1990, 2000)
YEARS_FOUNDED = (1900, 1925, 1950, 1975, 2000)
POPULATIONS = (20000, 50000, 100000, 200000, 500000, 1000000, 2000000, 5000000)
AREAS = (50, 100, 200, 500, 1000, 2000)
REVENUES = (1, 2, 5, 10, 20, 50)
GDPS = (5, 10, 50, 100, 500, 1000, 5000)
HEADCOUNTS = (4, 5, 6, 8, 10)


def _pick(rng: random.Random, items: Sequence[str]) -> str:
    return items[rng.randrange(len(items))]


def _with(rng, items, pred, tries: int = 50) -> str | None:
    for _ in range(tries):
        x = _pick(rng, items)
        if pred(x):
            return x
    return None


def _org_with_staff(rng, w, n=3):
    return _with(rng, w.orgs, lambda o: len(w.employees.get(o, ())) >= n)


def _city_with_natives(rng, w, n=3):
    return _with(rng, w.cities, lambda c: len(w.natives.get(c, ())) >= n)


def _country_with_cities(rng, w, n=3):
    return _with(rng, w.countries, lambda k: len(w.cities_of.get(k, ())) >= n)


def _s_org(rng, w):
    o = _org_with_staff(rng, w)
    return o and {"O": o}


def _s_country(rng, w):
    k = _country_with_cities(rng, w)
    return k and {"K": k}


def _s_country_orgs(rng, w):
    k = _with(rng, w.countries, lambda k: len(w.orgs_in_country(k)) >= 2)
    return k and {"K": k}


def _s_city(rng, w):
    c = _city_with_natives(rng, w)
    return c and {"C": c}


def _s_hq_city(rng, w):
    o = _pick(rng, w.orgs)
    return {"C": w.hq[o]} if o in w.hq else None


def _s_person(rng, w):
    return {"P": _pick(rng, w.people)}


def _s_org_and_native_city(rng, w):
    o = _org_with_staff(rng, w)
    if o is None:
        return None
    return {"O": o, "C": w.birth_city[_pick(rng, w.employees[o])]}


def _s_city_and_employer(rng, w):
    c = _city_with_natives(rng, w)
    if c is None:
        return None
    return {"C": c, "O": w.employer[_pick(rng, w.natives[c])]}


def _s_two_hq_cities(rng, w):
    a, b = _pick(rng, w.orgs), _pick(rng, w.orgs)
    if w.hq.get(a) == w.hq.get(b) or a not in w.hq or b not in w.hq:
        return None
    return {"C1": w.hq[a], "C2": w.hq[b]}


def _s_two_orgs(rng, w):
    a, b = _org_with_staff(rng, w, 2), _org_with_staff(rng, w, 2)
    return None if a is None or b is None or a == b else {"O1": a, "O2": b}


def _s_two_cities(rng, w):
    a, b = _city_with_natives(rng, w, 1), _city_with_natives(rng, w, 1)
    return None if a is None or b is None or a == b else {"C1": a, "C2": b}


def _s_person_country(rng, w):
    p = _pick(rng, w.people)
    true = w.country_of[w.hq[w.employer[p]]]
    # Half the questions name the true country, so "yes" and "no" are both common.
    return {"P": p, "K": true if rng.random() < 0.5 else _pick(rng, w.countries)}


def _s_person_org(rng, w):
    return {"P": _pick(rng, w.people), "O": _pick(rng, w.orgs)}


def _s_city_two_orgs(rng, w):
    c = _city_with_natives(rng, w)
    if c is None:
        return None
    o1 = w.employer[_pick(rng, w.natives[c])]
    o2 = _pick(rng, w.orgs)
    return None if o1 == o2 else {"C": c, "O1": o1, "O2": o2}


def _kind(name, reasoning, program, variants, wordings, sample, numbers=None, nonempty=True) -> Kind:
    for i, wording in enumerate(wordings):
        if set(wording) != set(variants):
            raise DatasetError(f"compositional kind {name}: wording {i} has variants {sorted(wording)}, "
                               f"expected {sorted(variants)}")
    return Kind(name, reasoning, program, variants, tuple(wordings), sample, numbers or {}, nonempty)


ONE = {"-": {}}
"""The variant of kinds without one."""

KINDS: tuple[Kind, ...] = (
    _kind("FilterCountHeight", "filter", "Find({O});RelateInv(works_at);FilterNum(height_cm,{op},{N});Count()",
          GT_LT, (
              {">": "How many employees of {O} are taller than {N} cm?",
               "<": "How many employees of {O} are shorter than {N} cm?"},
              {">": "Count the people working at {O} whose height is above {N} cm.",
               "<": "Count the people working at {O} whose height is below {N} cm."},
              {">": "What number of {O} workers measure more than {N} centimetres?",
               "<": "What number of {O} workers measure less than {N} centimetres?"},
              {">": "Of the people employed by {O}, how many stand over {N} cm tall?",
               "<": "Of the people employed by {O}, how many are under {N} cm tall?"},
              {">": "Among {O}'s staff, how many have a height greater than {N} cm?",
               "<": "Among {O}'s staff, how many have a height smaller than {N} cm?"},
          ), _s_org, {"N": ("height_cm", HEIGHTS)}),
    _kind("FilterListPopulation", "filter", "Find({K});RelateInv(located_in);FilterNum(population,{op},{N});QueryName()",
          GT_LT, (
              {">": "Which cities in {K} have more than {N} inhabitants?",
               "<": "Which cities in {K} have fewer than {N} inhabitants?"},
              {">": "List the cities of {K} with a population above {N}.",
               "<": "List the cities of {K} with a population below {N}."},
              {">": "Name the cities located in {K} whose population exceeds {N}.",
               "<": "Name the cities located in {K} whose population is under {N}."},
              {">": "Which of {K}'s cities are home to over {N} people?",
               "<": "Which of {K}'s cities are home to fewer than {N} people?"},
              {">": "In {K}, which towns have a population greater than {N}?",
               "<": "In {K}, which towns have a population smaller than {N}?"},
          ), _s_country, {"N": ("population", POPULATIONS)}),
    _kind("FilterCountBirthYear", "filter", "Find({C});RelateInv(born_in);FilterNum(birth_year,{op},{Y});Count()",
          GT_LT, (
              {">": "How many natives of {C} were born after {Y}?",
               "<": "How many natives of {C} were born before {Y}?"},
              {">": "Count the people whose birthplace is {C} and whose birth year is later than {Y}.",
               "<": "Count the people whose birthplace is {C} and whose birth year is earlier than {Y}."},
              {">": "What is the number of people born in {C} after {Y}?",
               "<": "What is the number of people born in {C} before {Y}?"},
              {">": "Of those born in {C}, how many came into the world after {Y}?",
               "<": "Of those born in {C}, how many came into the world before {Y}?"},
              {">": "How many persons with {C} as their place of birth have a birth year greater than {Y}?",
               "<": "How many persons with {C} as their place of birth have a birth year less than {Y}?"},
          ), _s_city, {"Y": ("birth_year", YEARS_BORN)}),
    _kind("FilterListRevenue", "filter",
          "Find({C});RelateInv(headquarters_in);FilterNum(revenue_billion_usd,{op},{N});QueryName()",
          GT_LT, (
              {">": "Which companies headquartered in {C} have revenue above {N} billion dollars?",
               "<": "Which companies headquartered in {C} have revenue below {N} billion dollars?"},
              {">": "List the organizations based in {C} with revenues of more than {N} billion USD.",
               "<": "List the organizations based in {C} with revenues of less than {N} billion USD."},
              {">": "Name the firms with head office in {C} whose revenue exceeds {N} billion dollars.",
               "<": "Name the firms with head office in {C} whose revenue is below {N} billion dollars."},
              {">": "Which {C}-based businesses earn over {N} billion dollars?",
               "<": "Which {C}-based businesses earn under {N} billion dollars?"},
              {">": "What organizations have their headquarters in {C} and a turnover greater than ${N} billion?",
               "<": "What organizations have their headquarters in {C} and a turnover smaller than ${N} billion?"},
          ), _s_hq_city, {"N": ("revenue_billion_usd", REVENUES)}),
    _kind("FilterCountArea", "filter", "Find({K});RelateInv(located_in);FilterNum(area_km2,{op},{N});Count()",
          GT_LT, (
              {">": "How many cities in {K} have an area larger than {N} km2?",
               "<": "How many cities in {K} have an area smaller than {N} km2?"},
              {">": "Count the cities of {K} whose area is above {N} square kilometres.",
               "<": "Count the cities of {K} whose area is below {N} square kilometres."},
              {">": "What number of cities located in {K} cover more than {N} km2?",
               "<": "What number of cities located in {K} cover less than {N} km2?"},
              {">": "How many of {K}'s cities span over {N} square kilometers?",
               "<": "How many of {K}'s cities span under {N} square kilometers?"},
              {">": "In {K}, how many towns have a surface area exceeding {N} km2?",
               "<": "In {K}, how many towns have a surface area of less than {N} km2?"},
          ), _s_country, {"N": ("area_km2", AREAS)}),
    _kind("VerifyGDP", "verify-number", "Find({K});QueryAttr(gdp_billion_usd);VerifyNum({op},{N})",
          GT_LT, (
              {">": "Is the GDP of {K} above {N} billion dollars?",
               "<": "Is the GDP of {K} below {N} billion dollars?"},
              {">": "Does {K} have a GDP of more than {N} billion USD?",
               "<": "Does {K} have a GDP of less than {N} billion USD?"},
              {">": "Is {K}'s gross domestic product greater than {N} billion dollars?",
               "<": "Is {K}'s gross domestic product smaller than {N} billion dollars?"},
              {">": "Does the economy of {K} exceed {N} billion dollars?",
               "<": "Is the economy of {K} under {N} billion dollars?"},
              {">": "Is it true that {K}'s GDP is higher than ${N} billion?",
               "<": "Is it true that {K}'s GDP is lower than ${N} billion?"},
          ), lambda rng, w: {"K": _pick(rng, w.countries)}, {"N": ("gdp_billion_usd", GDPS)}),
    _kind("VerifyEmployerFounded", "verify-number",
          "Find({P});Relate(works_at);QueryAttr(founded_year);VerifyNum({op},{Y})",
          GT_LT, (
              {"<": "Was the employer of {P} founded before {Y}?",
               ">": "Was the employer of {P} founded after {Y}?"},
              {"<": "Was the company {P} works for established earlier than {Y}?",
               ">": "Was the company {P} works for established later than {Y}?"},
              {"<": "Is the founding year of {P}'s employer before {Y}?",
               ">": "Is the founding year of {P}'s employer after {Y}?"},
              {"<": "Did {P}'s company come into existence prior to {Y}?",
               ">": "Did {P}'s company come into existence after {Y}?"},
              {"<": "Was the organization that employs {P} founded before the year {Y}?",
               ">": "Was the organization that employs {P} founded after the year {Y}?"},
          ), _s_person, {"Y": ("founded_year", YEARS_FOUNDED)}),
    _kind("VerifyHeadcount", "verify-number", "Find({O});RelateInv(works_at);Count();VerifyNum({op},{N})",
          GT_LT, (
              {">": "Does {O} have more than {N} employees?",
               "<": "Does {O} have fewer than {N} employees?"},
              {">": "Do more than {N} people work at {O}?",
               "<": "Do fewer than {N} people work at {O}?"},
              {">": "Is the number of people employed by {O} greater than {N}?",
               "<": "Is the number of people employed by {O} smaller than {N}?"},
              {">": "Are there over {N} workers at {O}?",
               "<": "Are there under {N} workers at {O}?"},
              {">": "Does the workforce of {O} exceed {N} people?",
               "<": "Is the workforce of {O} below {N} people?"},
          ), lambda rng, w: {"O": _pick(rng, w.orgs)}, {"N": ("count", HEADCOUNTS)}),
    _kind("DiffList", "difference",
          "Find({O});RelateInv(works_at);Find({C});RelateInv(born_in);Diff();QueryName()", ONE, (
              {"-": "Which employees of {O} were not born in {C}?"},
              {"-": "List the people working at {O} except those born in {C}."},
              {"-": "Who works for {O} but was born somewhere other than {C}?"},
              {"-": "Apart from the natives of {C}, who is employed by {O}?"},
              {"-": "Name everyone at {O} whose birthplace is not {C}."},
          ), _s_org_and_native_city),
    _kind("DiffCount", "difference",
          "Find({C});RelateInv(born_in);Find({O});RelateInv(works_at);Diff();Count()", ONE, (
              {"-": "How many people born in {C} do not work for {O}?"},
              {"-": "Count the natives of {C} who are not employed by {O}."},
              {"-": "What is the number of people from {C} who work somewhere other than {O}?"},
              {"-": "Excluding employees of {O}, how many people were born in {C}?"},
              {"-": "How many people whose birthplace is {C} are not on the payroll of {O}?"},
          ), _s_city_and_employer),
    _kind("UnionCountHQ", "union",
          "Find({C1});RelateInv(headquarters_in);Find({C2});RelateInv(headquarters_in);Or();Count()", ONE, (
              {"-": "How many organizations are headquartered in {C1} or {C2}?"},
              {"-": "Count the companies based in either {C1} or {C2}."},
              {"-": "What is the number of firms with headquarters in {C1} or in {C2}?"},
              {"-": "Taken together, how many businesses have their head office in {C1} or {C2}?"},
              {"-": "How many companies are based in {C1} or else in {C2}?"},
          ), _s_two_hq_cities),
    _kind("UnionListEmployees", "union",
          "Find({O1});RelateInv(works_at);Find({O2});RelateInv(works_at);Or();QueryName()", ONE, (
              {"-": "Who works at {O1} or {O2}?"},
              {"-": "List the employees of either {O1} or {O2}."},
              {"-": "Which people are employed by {O1} or by {O2}?"},
              {"-": "Name everyone who works for {O1} or for {O2}."},
              {"-": "Which persons have a job at {O1} or at {O2}?"},
          ), _s_two_orgs),
    _kind("CompareNativeCounts", "compare-count",
          "Find({C1});RelateInv(born_in);Count();Find({C2});RelateInv(born_in);Count();Compare({op})", GT_LT, (
              {">": "Were more people born in {C1} than in {C2}?",
               "<": "Were fewer people born in {C1} than in {C2}?"},
              {">": "Does {C1} have more natives than {C2}?",
               "<": "Does {C1} have fewer natives than {C2}?"},
              {">": "Is the number of people born in {C1} greater than the number born in {C2}?",
               "<": "Is the number of people born in {C1} smaller than the number born in {C2}?"},
              {">": "Compared with {C2}, were more people born in {C1}?",
               "<": "Compared with {C2}, were fewer people born in {C1}?"},
              {">": "Do more people come from {C1} than from {C2}?",
               "<": "Do fewer people come from {C1} than from {C2}?"},
          ), _s_two_cities),
    _kind("CompareHeadcounts", "compare-count",
          "Find({O1});RelateInv(works_at);Count();Find({O2});RelateInv(works_at);Count();Compare({op})", GT_LT, (
              {">": "Does {O1} have more employees than {O2}?",
               "<": "Does {O1} have fewer employees than {O2}?"},
              {">": "Do more people work at {O1} than at {O2}?",
               "<": "Do fewer people work at {O1} than at {O2}?"},
              {">": "Is {O1}'s number of employees larger than {O2}'s?",
               "<": "Is {O1}'s number of employees smaller than {O2}'s?"},
              {">": "Compared to {O2}, does {O1} employ more people?",
               "<": "Compared to {O2}, does {O1} employ fewer people?"},
              {">": "Are there more people working at {O1} than at {O2}?",
               "<": "Are there fewer people working at {O1} than at {O2}?"},
          ), _s_two_orgs),
    _kind("ExtremeAreaOfFiltered", "superlative",
          "Find({K});RelateInv(located_in);FilterNum(population,>,{N});{ext}(area_km2);QueryName()", EXTREMES, (
              {"max": "Among the cities of {K} with more than {N} inhabitants, which has the largest area?",
               "min": "Among the cities of {K} with more than {N} inhabitants, which has the smallest area?"},
              {"max": "Which city in {K} with a population above {N} covers the largest area?",
               "min": "Which city in {K} with a population above {N} covers the smallest area?"},
              {"max": "Of the cities located in {K} that have over {N} residents, which one has the biggest area?",
               "min": "Of the cities located in {K} that have over {N} residents, which one has the smallest area?"},
              {"max": "Considering only cities in {K} with a population of more than {N}, which is the largest by area?",
               "min": "Considering only cities in {K} with a population of more than {N}, which is the smallest by area?"},
              {"max": "What is the city with the greatest area among {K}'s cities of more than {N} people?",
               "min": "What is the city with the least area among {K}'s cities of more than {N} people?"},
          ), _s_country, {"N": ("population", POPULATIONS[:5])}),
    _kind("ExtremeRevenueInCountry", "superlative",
          "Find({K});RelateInv(located_in);RelateInv(headquarters_in);{ext}(revenue_billion_usd);QueryName()",
          EXTREMES, (
              {"max": "Which company headquartered in {K} has the highest revenue?",
               "min": "Which company headquartered in {K} has the lowest revenue?"},
              {"max": "Among organizations based in {K}, which one earns the most?",
               "min": "Among organizations based in {K}, which one earns the least?"},
              {"max": "Name the firm with head office in {K} that has the largest revenue.",
               "min": "Name the firm with head office in {K} that has the smallest revenue."},
              {"max": "Of all the businesses headquartered in {K}, which has the greatest turnover?",
               "min": "Of all the businesses headquartered in {K}, which has the smallest turnover?"},
              {"max": "What is the highest-earning organization with its headquarters in {K}?",
               "min": "What is the lowest-earning organization with its headquarters in {K}?"},
          ), _s_country_orgs),
    _kind("BirthYearOfExtreme", "superlative",
          "Find({O});RelateInv(works_at);{ext}(height_cm);QueryAttr(birth_year)", EXTREMES, (
              {"max": "In which year was the tallest employee of {O} born?",
               "min": "In which year was the shortest employee of {O} born?"},
              {"max": "What is the birth year of the tallest person working at {O}?",
               "min": "What is the birth year of the shortest person working at {O}?"},
              {"max": "When was the tallest of {O}'s employees born?",
               "min": "When was the shortest of {O}'s employees born?"},
              {"max": "The tallest worker at {O} was born in what year?",
               "min": "The shortest worker at {O} was born in what year?"},
              {"max": "Which year of birth does the tallest member of {O}'s staff have?",
               "min": "Which year of birth does the shortest member of {O}'s staff have?"},
          ), _s_org),
    _kind("NativesOfExtremeCity", "superlative",
          "Find({K});RelateInv(located_in);{ext}(population);RelateInv(born_in);Count()", EXTREMES, (
              {"max": "How many people were born in the most populous city of {K}?",
               "min": "How many people were born in the least populous city of {K}?"},
              {"max": "Count the people whose birthplace is the largest city in {K}.",
               "min": "Count the people whose birthplace is the smallest city in {K}."},
              {"max": "What is the number of people born in {K}'s biggest city?",
               "min": "What is the number of people born in {K}'s smallest city?"},
              {"max": "In the most populated city of {K}, how many people were born?",
               "min": "In the least populated city of {K}, how many people were born?"},
              {"max": "How many natives does the city of {K} with the most inhabitants have?",
               "min": "How many natives does the city of {K} with the fewest inhabitants have?"},
          ), _s_country),
    _kind("StaffOfCountry", "chain",
          "Find({K});RelateInv(located_in);RelateInv(headquarters_in);RelateInv(works_at);Count()", ONE, (
              {"-": "How many people work for companies headquartered in {K}?"},
              {"-": "Count the employees of organizations based in {K}."},
              {"-": "What is the total number of people employed by firms with head offices in {K}?"},
              {"-": "How many workers do the businesses headquartered in {K} employ altogether?"},
              {"-": "How many people have a job at an organization whose headquarters are in {K}?"},
          ), _s_country_orgs),
    _kind("CitiesOfEmployerCountry", "chain",
          "Find({P});Relate(works_at);Relate(headquarters_in);Relate(located_in);RelateInv(located_in);Count()",
          ONE, (
              {"-": "How many cities are there in the country where {P}'s employer is headquartered?"},
              {"-": "Count the cities of the country in which the company {P} works for is based."},
              {"-": "What number of cities does the country hosting the headquarters of {P}'s employer have?"},
              {"-": "The organization employing {P} has its head office in some country; how many cities does that country have?"},
              {"-": "How many cities lie in the same country as the headquarters of {P}'s company?"},
          ), _s_person),
    _kind("BirthCountriesOfStaff", "chain",
          "Find({O});RelateInv(works_at);Relate(born_in);Relate(located_in);QueryName()", ONE, (
              {"-": "In which countries were the employees of {O} born?"},
              {"-": "List the countries of birth of the people working at {O}."},
              {"-": "Which nations are the birthplaces of {O}'s workers located in?"},
              {"-": "From which countries do the people employed by {O} originate?"},
              {"-": "Name the home countries of everyone who works at {O}."},
          ), _s_org),
    _kind("VerifyEmployerCountry", "verify-chain",
          "Find({P});Relate(works_at);Relate(headquarters_in);VerifyRel(located_in,{K})", ONE, (
              {"-": "Is the employer of {P} headquartered in {K}?"},
              {"-": "Is the company {P} works for based in {K}?"},
              {"-": "Does {P} work for an organization with its head office in {K}?"},
              {"-": "Is {P}'s employer's headquarters located in {K}?"},
              {"-": "Does {P} have a job at a company headquartered in {K}?"},
          ), _s_person_country),
    _kind("CompareAcrossPaths", "compare-chain",
          "Find({P});Relate(born_in);QueryAttr(population);Find({O});Relate(headquarters_in);"
          "QueryAttr(population);Compare({op})", GT_LT, (
              {">": "Is the birthplace of {P} more populous than the city where {O} is headquartered?",
               "<": "Is the birthplace of {P} less populous than the city where {O} is headquartered?"},
              {">": "Does {P}'s birth city have a larger population than {O}'s headquarters city?",
               "<": "Does {P}'s birth city have a smaller population than {O}'s headquarters city?"},
              {">": "Is the population of the city where {P} was born greater than that of the city hosting {O}'s head office?",
               "<": "Is the population of the city where {P} was born smaller than that of the city hosting {O}'s head office?"},
              {">": "Compared with the city {O} is based in, does the city {P} was born in have more inhabitants?",
               "<": "Compared with the city {O} is based in, does the city {P} was born in have fewer inhabitants?"},
              {">": "Are there more residents in {P}'s hometown than in the city where {O} has its headquarters?",
               "<": "Are there fewer residents in {P}'s hometown than in the city where {O} has its headquarters?"},
          ), _s_person_org),
    _kind("ThreeEntities", "multi-entity",
          "Find({C});RelateInv(born_in);Find({O1});RelateInv(works_at);Find({O2});RelateInv(works_at);Or();And();Count()",
          ONE, (
              {"-": "How many people born in {C} work for {O1} or {O2}?"},
              {"-": "Count the natives of {C} employed by either {O1} or {O2}."},
              {"-": "What is the number of people from {C} who work at {O1} or at {O2}?"},
              {"-": "Among those born in {C}, how many have a job at {O1} or {O2}?"},
              {"-": "How many employees of {O1} or {O2} were born in {C}?"},
          ), _s_city_two_orgs),
    _kind("TwoFilters", "filter",
          "Find({O});RelateInv(works_at);FilterNum(birth_year,{op},{Y});FilterNum(height_cm,{op},{N});Count()",
          GT_LT, (
              {">": "How many employees of {O} were born after {Y} and are taller than {N} cm?",
               "<": "How many employees of {O} were born before {Y} and are shorter than {N} cm?"},
              {">": "Count the people working at {O} born later than {Y} whose height is above {N} cm.",
               "<": "Count the people working at {O} born earlier than {Y} whose height is below {N} cm."},
              {">": "What number of {O} employees were born after {Y} and measure more than {N} cm?",
               "<": "What number of {O} employees were born before {Y} and measure less than {N} cm?"},
              {">": "Of {O}'s staff born after {Y}, how many stand over {N} cm tall?",
               "<": "Of {O}'s staff born before {Y}, how many are under {N} cm tall?"},
              {">": "How many people employed by {O} have a birth year greater than {Y} and a height greater than {N} cm?",
               "<": "How many people employed by {O} have a birth year less than {Y} and a height less than {N} cm?"},
          ), _s_org, {"Y": ("birth_year", YEARS_BORN[1:5]), "N": ("height_cm", HEIGHTS)}),
    _kind("FoundedInCountry", "filter",
          "Find({K});RelateInv(located_in);RelateInv(headquarters_in);FilterNum(founded_year,{op},{Y});Count()",
          GT_LT, (
              {"<": "How many companies headquartered in {K} were founded before {Y}?",
               ">": "How many companies headquartered in {K} were founded after {Y}?"},
              {"<": "Count the organizations based in {K} that were established earlier than {Y}.",
               ">": "Count the organizations based in {K} that were established later than {Y}."},
              {"<": "What number of firms with head offices in {K} have a founding year before {Y}?",
               ">": "What number of firms with head offices in {K} have a founding year after {Y}?"},
              {"<": "Of the businesses headquartered in {K}, how many date from before {Y}?",
               ">": "Of the businesses headquartered in {K}, how many date from after {Y}?"},
              {"<": "How many organizations in {K} were founded prior to {Y}?",
               ">": "How many organizations in {K} were founded after {Y}?"},
          ), _s_country_orgs, {"Y": ("founded_year", YEARS_FOUNDED)}),
)
"""The composition kinds, in the order the split is drawn."""


def kind_names() -> list[str]:
    return [k.name for k in KINDS]


def by_kind(name: str) -> Kind:
    """The kind called ``name``.

    :raises KeyError: for an unknown name.
    """
    for k in KINDS:
        if k.name == name:
            return k
    raise KeyError(name)


# ---- numbers as people write them ----------------------------------------------------------------

def _render_number(value: int | str, rng: random.Random) -> str:
    """``50000`` as ``50000``, ``50,000`` or ``50 thousand``; ``2000000`` also as ``2 million``.
    Years and small numbers stay digits (nobody writes "1,990")."""
    n = int(value)
    forms = [str(n)]
    if n >= 10000:
        forms.append(f"{n:,}")
        if n % 1_000_000 == 0:
            forms.append(f"{n // 1_000_000} million")
        elif n % 1000 == 0 and n < 1_000_000:
            forms.append(f"{n // 1000} thousand")
    return forms[rng.randrange(len(forms))]


# ---- drawing questions ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CompositionalDraft:
    """A question before execution."""

    part: str
    index: int
    kind: Kind
    wording: int
    variant: str
    slots: tuple[tuple[str, str], ...]
    question: str
    kopl: str
    program: object = field(compare=False, repr=False)     # the parsed gold program
    answer: Answer | None = field(default=None, compare=False)   # its native answer

    @property
    def id(self) -> str:
        return f"compositional-{self.part}-{self.index:05d}"


def _fillings(kind: Kind, wording: int, rng: random.Random, world: _World, seen: set[str]):
    """Endless fillings ``(slots, variant, question, program)`` of one wording, each program
    new to the split (``seen``); stops after many failed draws (a KB too small for the kind)."""
    variants = sorted(kind.variants)
    failures = 0
    while failures < 2000:
        slots = kind.sample(rng, world)
        if slots is None:
            failures += 1
            continue
        variant = variants[rng.randrange(len(variants))]
        numbers, shown = {}, {}
        for slot, (_, choices) in sorted(kind.numbers.items()):
            value = choices[rng.randrange(len(choices))]
            numbers[slot] = format_number(value)
            shown[slot] = _render_number(value, rng)
        program = kind.program.format(**slots, **numbers, **kind.variants[variant])
        if program in seen:
            failures += 1
            continue
        seen.add(program)
        question = kind.wordings[wording][variant].format(**slots, **shown)
        yield slots, variant, question, program


def _acceptable(kind: Kind, answer: Answer) -> bool:
    if not kind.nonempty:
        return True
    if answer.kind == "entities":
        return bool(answer.values)
    if answer.kind == "number" and kind.program.endswith("Count()"):
        return answer.values[0] != "0"
    return True


def _outcome_text(outcome) -> str:
    if isinstance(outcome, Answer):
        return f"{outcome.canonical()!r} ({outcome.kind})"
    return f"error: {str(outcome).splitlines()[0]}"


def _program(text: str) -> Program:
    """The program of a skeleton filled with names and numbers. The skeletons are this
    module's own (no nesting, no commas inside arguments), so a split on ``;`` and ``,``
    reads them exactly; it is ten times cheaper than the full parser, and the SPARQL side
    type-checks every program anyway."""
    steps = []
    for part in text.split(";"):
        op, _, rest = part.partition("(")
        args = rest[:-1]
        steps.append(Step(op, tuple(args.split(",")) if args else ()))
    return Program(tuple(steps))


def draw(native, seed: int = 42, parts: Sequence[str] = PARTS) -> list[CompositionalDraft]:
    """The split's questions in file order (parts, then kinds, then wordings), each with its
    native answer checked: a filling whose answer is empty (or a count of zero) is skipped,
    so every question asks about something that exists. ``parts``: stop after these (the
    parts are drawn in :data:`PARTS` order from one stream, so the train part alone is the
    same as in the full split).

    :raises DatasetError: when a wording cannot be filled :data:`PER_WORDING` times, or a
        gold program fails on the native engine.
    """
    world = _World(native.index)
    rng = random.Random(f"synkqa-{seed}-compositional")
    seen: set[str] = set()
    out: list[CompositionalDraft] = []
    for part in PARTS:
        if not any(p in parts for p in PARTS[PARTS.index(part):]):
            break
        index = 0
        for kind in KINDS:
            for wording, wpart in sorted(WORDING_PARTS.items()):
                if wpart != part:
                    continue
                got = 0
                for slots, variant, question, program in _fillings(kind, wording, rng, world, seen):
                    parsed = _program(program)
                    try:
                        answer = native.execute(parsed)
                    except (ExecutionError, ProgramError) as exc:
                        raise DatasetError(f"compositional gold program fails natively: {program} "
                                           f"({_outcome_text(exc)})") from None
                    if not _acceptable(kind, answer):
                        continue
                    index += 1
                    out.append(CompositionalDraft(part, index, kind, wording, variant,
                                                  tuple(sorted(slots.items())), question, program,
                                                  parsed, answer))
                    got += 1
                    if got == PER_WORDING[part]:
                        break
                if got < PER_WORDING[part]:
                    raise DatasetError(f"compositional kind {kind.name}, wording {wording}: only {got} "
                                       f"questions with a non-empty answer could be drawn "
                                       f"({PER_WORDING[part]} wanted)")
    return out


def build_records(native, sparql, seed: int = 42) -> list[dict]:
    """Draw the split (:func:`draw`, native answers), execute every gold program on SPARQL
    too, batched per program shape, and return the records in file order.

    ``native`` is a :class:`~store.executor.NativeExecutor` (its index also feeds the
    samplers), ``sparql`` a :class:`~store.executor.SparqlExecutor` compiling the portable
    dialect (the queries the records carry).

    :raises EngineDisagreement: when the engines differ on a program.
    """
    from kopl2sparql.compiler import compile_program

    drafts = draw(native, seed)
    sparql_out = sparql.execute_many([d.program for d in drafts])
    records = []
    for d, b in zip(drafts, sparql_out):
        if not isinstance(b, Answer) or d.answer != b:
            raise EngineDisagreement(
                f"engines disagree on the compositional gold program {d.kopl} ({d.kind.name}):\n"
                f"  native: {_outcome_text(d.answer)}\n  sparql: {_outcome_text(b)}")
        records.append({
            "id": d.id, "split": "compositional", "part": d.part, "question": d.question,
            "answer": d.answer.canonical(), "kopl": d.kopl,
            "sparql": compile_program(d.program, sparql.schema, sparql.dialect).sparql,
            "kind": d.kind.name, "wording": f"{d.kind.name}/{d.wording}", "variant": d.variant,
            "reasoning": d.kind.reasoning, "hops": d.kind.hops, "template_id": -1, "template": d.kind.name})
    return records


def write(records: Sequence[dict], path) -> tuple[int, int, str]:
    """Write ``records`` as JSONL at ``path``; returns ``(questions, bytes, sha256)``."""
    import hashlib
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    with open(path, "wb") as fh:
        fh.write(data)
    return len(records), len(data), hashlib.sha256(data).hexdigest()
