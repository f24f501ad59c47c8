"""A deterministic synthetic knowledge base shaped like KQA Pro's (a Wikidata subset).

``generate(scale, seed)`` returns a KB in KQA Pro's KB JSON format (KOPL.md §4)::

    {"concepts": {"C1": {"name": "human", "subclassOf": []}, ...},
     "entities": {"Q1": {"name": "Ashford", "instanceOf": ["C27"],
                         "attributes": [{"key", "value", "qualifiers"}, ...],
                         "relations": [{"relation", "direction", "object", "qualifiers"}, ...]}}}

Shape at scale 1 (KQA Pro: 16,960 entities, 794 concepts, 363 relations, 846 keys): 17,000
entities, about 700 concepts, 300 relation names and 650 keys (attribute and qualifier keys).
The entity count is linear in ``scale``; the vocabularies grow with ``scale ** 0.4`` below 1
and ``scale ** 0.1`` above it, so a tiny KB still has every kind of key and relation and a
huge one keeps a Wikidata-sized vocabulary, with floors of 40 concepts, 20 relations and
30 keys.

How it is built:

- Eleven concept families (human, settlement, country, organization, creative work ...) with
  hand-written seed concepts ("athlete", "capital city", "university" ...), grown to the
  target size by concepts named ``"<modifier> <parent>"`` ("coastal city"). Every concept's
  parents come earlier in the list, so the hierarchy has no cycle; roots have no parent,
  about 8% of grown concepts have a second one; depth is at most 5.
- Entities (``Q1`` ...; concepts are ``C1`` ..., so ids never collide) are spread over the
  families, then over each family's concepts (every seed concept is populated first, so the
  hand-written keys and relations occur at every scale). About 10% have a second direct
  concept, about 1% none.
- Names are generated per kind of concept ("University of X", "Mount X", "The Silent
  River" ...), unique at first; then about 4% of the entities are made to share a name in
  groups of 2 or 3 (KQA Pro's names are not unique either). Entity names start with a capital
  letter and concept names are lowercase, so no entity is named like a concept (``kopl``'s
  ``FilterConcept`` looks concepts up by name among all names).
- Keys have natural domains (a concept: the key applies to the entities in its subtree) and
  one value type each, except :data:`MIXED_TIME_KEYS` whose values are years or dates, as in
  KQA Pro. Some keys occur with two units ("height": centimetre or metre; "length":
  kilometre or metre; "prize money": dollar or euro) so that unit-mismatch semantics get
  exercised. Multi-valued keys ("population" ...) carry one value per ``point in time``.
- Relations have a domain and a range concept, are functional (one object per subject) or
  many-to-many; symmetric ones ("spouse") are written as two facts, as in Wikidata. Every
  fact is written twice, forward on the subject and backward on the object, with equal (but
  not shared) qualifier dicts: the ``kopl`` engine only follows what is written and
  rewrites qualifier lists in place.
- Hand-written keys and relations are topped up with synthetic ones ("annual budget",
  "former sponsor") whose domains are populated concepts below the family roots; every key
  and relation whose domain (and range) is populated is forced to occur at least once.
- Facts are drawn independently, so they need not be historically coherent (a
  member of a sports team may have joined before birth); only "capital" is made coherent
  (a country's capital is one of its cities when it has any).

Determinism: one ``random.Random(seed)`` feeds one sub-generator per stage (so the stages do
not perturb one another); no set is ever iterated, no ``hash()`` order, no clock. Every list
is built in a fixed order, so equal arguments give equal dicts and equal JSON bytes in any
process.
"""

from __future__ import annotations

import calendar
import datetime
import math
import numbers
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ontology.errors import ConfigError

__all__ = ["generate", "ScaleError", "MAX_SCALE", "BASE_ENTITIES", "MIXED_TIME_KEYS",
           "QUALIFIER_KEYS", "vocabulary_sizes"]

MAX_SCALE = 100.0
BASE_ENTITIES = 17_000
BASE_CONCEPTS, BASE_RELATIONS, BASE_KEYS = 700, 300, 650
MIN_CONCEPTS, MIN_RELATIONS, MIN_KEYS = 40, 20, 30
MIN_PER_FAMILY = 2
MIN_ENTITIES = 40

MIXED_TIME_KEYS = frozenset({"point in time", "date of birth"})
"""Keys whose values are years or dates (every other key has exactly one value type)."""

_FIRST = datetime.date(1000, 1, 1).toordinal()
_LAST = datetime.date(2025, 12, 31).toordinal()

Value = dict
Gen = Callable[[random.Random, dict], "Value | None"]
"""A value generator: ``gen(rng, ctx)``; ``ctx`` holds the entity's name and per-entity
scratch (the birth year for the death date). ``None`` means "no value after all"."""


class ScaleError(ConfigError):
    """``scale`` (or ``seed``) out of range."""


# ---- values ---------------------------------------------------------------------------------

def _str(text: str) -> Value:
    return {"type": "string", "value": text}


def _qty(number: int | float, unit: str = "1") -> Value:
    return {"type": "quantity", "value": number, "unit": unit}


def _year(year: int) -> Value:
    return {"type": "year", "value": year}


def _date(ordinal: int) -> Value:
    return {"type": "date", "value": datetime.date.fromordinal(ordinal).isoformat()}


def _year_start(year: int) -> int:
    return datetime.date(year, 1, 1).toordinal()


def _ordinal_in(rng: random.Random, first_year: int, last_year: int) -> int:
    """A uniformly drawn day of the years ``first_year..last_year`` (clipped to 1000..2025)."""
    lo = _year_start(max(1000, first_year))
    hi = min(_LAST, _year_start(min(2025, last_year) + 1) - 1)
    return lo + int(rng.random() * (hi - lo + 1))


def _day_of(rng: random.Random, year: int) -> int:
    return _year_start(year) + int(rng.random() * (366 if calendar.isleap(year) else 365))


def _number(x: float, floats: bool) -> int | float:
    """``x`` as an int, or as a float with at most 2 decimals (``round`` gives the double
    nearest to the 2-decimal number, whose repr is that short decimal); never ``-0.0``."""
    v: int | float = round(x, 2) if floats else int(round(x))
    return 0 if v == 0 else v


def _num(lo: float, hi: float, unit: str = "1", *, log: bool = False, floats: float = 0.0,
         neg: float = 0.0, zero: float = 0.0,
         alt: tuple[str, float, float, bool] | None = None) -> Gen:
    """Quantities uniform (or log-uniform) in ``[lo, hi]``; ``floats`` of them floats, ``neg``
    negated, ``zero`` zeros. ``alt = (unit, factor, probability, floats)``: a second unit."""
    llo, lhi = (math.log(lo), math.log(hi)) if log else (0.0, 0.0)

    def gen(rng: random.Random, ctx: dict) -> Value:
        r = rng.random()
        x = math.exp(llo + (lhi - llo) * r) if log else lo + (hi - lo) * r
        u, as_float = unit, rng.random() < floats
        if alt is not None and rng.random() < alt[2]:
            x, u, as_float = x * alt[1], alt[0], alt[3]
        z = rng.random()
        if z < zero:
            return _qty(0, u)
        if z < zero + neg:
            x = -x
        return _qty(_number(x, as_float), u)
    return gen


def _years(lo: int, hi: int) -> Gen:
    return lambda rng, ctx: _year(lo + int(rng.random() * (hi - lo + 1)))


def _dates(lo: int, hi: int) -> Gen:
    return lambda rng, ctx: _date(_ordinal_in(rng, lo, hi))


def _pick(pool: Sequence[str], weights: Sequence[float] | None = None) -> Gen:
    if weights is None:
        return lambda rng, ctx: _str(pool[int(rng.random() * len(pool))])
    cum = [sum(weights[:i + 1]) for i in range(len(weights))]
    return lambda rng, ctx: _str(rng.choices(pool, cum_weights=cum)[0])


def _code(letters: int, digits: int, sep: str = "-") -> Gen:
    def gen(rng: random.Random, ctx: dict) -> Value:
        head = "".join(chr(65 + int(rng.random() * 26)) for _ in range(letters))
        tail = "".join(str(int(rng.random() * 10)) for _ in range(digits))
        return _str(f"{head}{sep}{tail}" if head and tail else head + tail)
    return gen


def _birth(rng: random.Random, ctx: dict) -> Value:
    # ~10% of KQA Pro's birth dates are years only: keep that.
    year = 1700 + int(rng.random() * 306)
    ctx["born"] = year
    return _year(year) if rng.random() < 0.1 else _date(_day_of(rng, year))


def _death(rng: random.Random, ctx: dict) -> Value | None:
    born = ctx.get("born")
    if born is None or rng.random() >= (0.9 if born < 1935 else 0.1):
        return None
    lo, hi = born + 20, min(2025, born + 100)
    return _date(_ordinal_in(rng, lo, hi)) if lo <= hi else None


def _official_name(rng: random.Random, ctx: dict) -> Value:
    return _str(ctx["name"])


def _website(rng: random.Random, ctx: dict) -> Value:
    slug = "".join(ch for ch in ctx["name"].lower() if "a" <= ch <= "z")[:24] or "site"
    return _str(f"https://www.{slug}.example.org")


def _iso3(rng: random.Random, ctx: dict) -> Value:
    letters = [ch for ch in ctx["name"].upper() if "A" <= ch <= "Z"] + ["X", "Z", "Q"]
    return _str("".join(letters[:2]) + chr(65 + int(rng.random() * 26)))


# ---- word lists -------------------------------------------------------------------------------

_GIVEN = (
    "James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara "
    "Richard Susan Joseph Jessica Thomas Sarah Charles Karen Daniel Nancy Matthew Lisa Anthony "
    "Betty Mark Margaret Paul Sandra Steven Ashley Andrew Emily Kenneth Donna George Michelle "
    "Edward Carol Brian Amanda Ronald Melissa Kevin Deborah Jason Stephanie Jeffrey Rebecca "
    "Gary Laura Timothy Helen Larry Cynthia Eric Kathleen Frank Amy Scott Angela Henry Anna "
    "Peter Ruth Hans Greta Pierre Claire Luis Carmen Marco Giulia Ivan Olga Kenji Yuki Ahmed "
    "Fatima Lars Ingrid Pedro Lucía José Zoé Jürgen Renée Chloé André Björn Søren Zoë Raúl "
    "Inés Jörg François Noémie Sebastián Agnieszka Tomasz Priya Arjun Mei Wei Amara Kwame "
    "Sofia Mateo Elena Nikolai Aiko Hiro Leila Omar Astrid Nils Maeve Declan").split()
_SURNAMES = (
    "Smith Johnson Williams Brown Jones Miller Davis Wilson Anderson Taylor Thomas Moore Martin "
    "Jackson Thompson White Harris Clark Lewis Robinson Walker Young Allen King Wright Scott "
    "Hill Green Adams Baker Nelson Carter Mitchell Roberts Turner Phillips Campbell Parker "
    "Evans Edwards Collins Stewart Morris Rogers Reed Cook Morgan Bell Murphy Bailey Cooper "
    "Richardson Cox Howard Ward Peterson Gray Watson Brooks Kelly Sanders Price Bennett Wood "
    "Barnes Ross Henderson Coleman Jenkins Perry Powell Long Patterson Hughes Flores Butler "
    "Simmons Foster Bryant Alexander Russell Griffin Hayes Myers Ford Hamilton Graham Sullivan "
    "Wallace Woods Cole West Jordan Owens Reynolds Fisher Ellis Harrison Gibson McDonald "
    "Marshall Schneider Fischer Weber Wagner Becker Hoffmann Schäfer Koch Richter Klein Wolf "
    "Dubois Lefèvre Moreau Laurent Girard Rossi Russo Ferrari Esposito Bianchi Romano Novak "
    "Kowalski Nowak Ivanov Petrov Sokolov Tanaka Suzuki Sato Watanabe Kim Lee Park Chen Wang "
    "Zhang Liu Singh Kumar Patel Khan Hansen Larsen Nielsen Jensen Andersson Johansson "
    "Karlsson Nilsson Müller García Martínez Rodríguez López González Pérez Sánchez Gómez "
    "Fernández O'Brien O'Neill O'Connor D'Angelo Smith-Jones Lloyd-Evans Okafor Mensah "
    "Haddad Nakamura Yilmaz Kaya Horvat Kovač Popescu Dimitrov Lindqvist Brennan").split()
_PLACE_START = (
    "Ash Bel Brook Cal Dun El Fair Glen Hal Kings Lin Mar Nor Oak Pen Rich Stan Thorn Wal Wy "
    "Ber Kro Val Mon Sal Tre Gar Lau Ros Vin Zel Alt Bran Cor Dor Fen Gras Hel Kal Lud Grün "
    "Bré Mün Ost Sil Tor Ul Ard Bram Cas Dra Eb Fal").split()
_PLACE_MID = ("", "", "", "a", "en", "er", "in", "o", "ing", "s", "ham")
_PLACE_END = (
    "ton ford ville burg field mouth stead wick bridge haven port dale holm berg stadt heim by "
    "thorpe minster chester gate more wood sund vik grad polis ona era ano ach ov").split()
_PLACE_PREFIX = ("New ", "Port ", "Saint-", "North ", "South ", "East ", "West ", "Bad ", "Le ",
                 "Upper ", "Lower ", "Fort ")
_ADJ = (
    "Silent Broken Golden Last Hidden Lost Distant Crimson Endless Wild Quiet Burning Frozen "
    "Secret Little Eternal Dark Bright Fallen Rising Hollow Silver Electric Midnight Summer "
    "Winter Northern Southern Forgotten Restless Sacred Wandering Velvet Iron Glass Paper "
    "Scarlet Gentle Bitter Sweet Lonely Savage Strange Invisible Infinite Perfect Final First "
    "Second Blue Green Red White Black Ancient Modern Brave Careless Hungry Shining").split()
_NOUN = (
    "River Garden Season Heart Road Shadow Kingdom Window Storm Mirror Harbor Dream Empire "
    "Forest Promise Voyage Letter Island Horizon Song Crown Bridge Night Morning Fire Ocean "
    "Mountain Station Machine Castle Angel Stranger Soldier Daughter Son Hunter Painter "
    "Witness Journey Memory Silence Thunder Whisper Echo Legacy Border City Valley Moon Sun "
    "Star Rain Snow Wind Stone Rose Lantern Compass Anchor Train Circus Carnival Orchard Tide "
    "Frontier Labyrinth Paradise Requiem Symphony Ballad Chronicle Story Game Doctor Detective "
    "Captain Prince Queen King Ghost").split()
_IDEOLOGY = ("Democratic Liberal Conservative Socialist Green Progressive People's Labour "
             "National Republican Christian Agrarian Pirate Unity Freedom Reform").split()
_FIELD = ("Trade Health Fisheries Aviation Telecommunication Labour Maritime Weather Energy "
          "Science Sport Culture Physics Chemistry Literature Music Peace Architecture").split()
_GENRE_BASE = ("rock jazz folk pop drama comedy thriller western noir soul ambient opera fantasy "
               "horror poetry satire romance punk blues metal").split()
_GENRE_PREFIX = ("Neo-", "Post-", "Proto-", "Dark ", "Indie ", "Progressive ", "Psychedelic ",
                 "Experimental ", "Nordic ", "Southern ", "Latin ", "Baroque ", "Electro-",
                 "Avant-garde ", "Folk ", "Space ", "Industrial ", "Chamber ", "Gothic ",
                 "Cosmic ", "Tropical ")


def _c(rng: random.Random, seq: Sequence[str]) -> str:
    return seq[int(rng.random() * len(seq))]


def _stem(rng: random.Random) -> str:
    return _c(rng, _PLACE_START) + _c(rng, _PLACE_MID) + _c(rng, _PLACE_END)


def _place(rng: random.Random) -> str:
    stem = _stem(rng)
    r = rng.random()
    if r < 0.15:
        return _c(rng, _PLACE_PREFIX) + stem
    if r < 0.17:
        return stem + "-on-Sea"
    return stem


def _person(rng: random.Random) -> str:
    given, surname = _c(rng, _GIVEN), _c(rng, _SURNAMES)
    if rng.random() < 0.2:                  # a middle initial widens the name space tenfold
        return f"{given} {chr(65 + int(rng.random() * 26))}. {surname}"
    return f"{given} {surname}"


def _work(rng: random.Random) -> str:
    a, n, m = _c(rng, _ADJ), _c(rng, _NOUN), _c(rng, _NOUN)
    return _c(rng, (f"The {a} {n}", f"{a} {n}", f"{n} of the {m}", f"The {n}'s {m}",
                    f"{a} {n}, {_c(rng, _ADJ)} {m}", f"{n} in {_place(rng)}", f"{n}s and {m}s",
                    f"{a} {n} ({_c(rng, ('Live', 'Reprise', 'Remix', 'Redux'))})"))


_NAMERS: dict[str, Callable[[random.Random], str]] = {
    "human": _person,
    "human settlement": _place,
    "administrative territorial entity": lambda r: _c(r, (
        f"{_place(r)} Province", f"{_place(r)} County", f"Canton of {_stem(r)}",
        f"{_stem(r)} District", f"{_stem(r)} Oblast", f"Department of {_stem(r)}")),
    "country": lambda r: (_c(r, ("Republic of ", "Kingdom of ", "Federated States of "))
                          if r.random() < 0.2 else "") + _stem(r) + _c(
        r, ("ia", "land", "stan", "ora", "ovia", "any", "ica")),
    "organization": lambda r: f"{_place(r)} " + _c(r, (
        "Foundation", "Society", "Institute", "Group", "Association", "Trust", "Council",
        "Agency", "Academy", "Guild")),
    "business": lambda r: _c(r, (
        f"{_c(r, _SURNAMES)} & {_c(r, _SURNAMES)}", f"{_c(r, _SURNAMES)} Brothers",
        f"{_stem(r).capitalize()}tronix Inc.", f"{_place(r)} Holdings",
        f"{_c(r, _ADJ)} {_c(r, _NOUN)} Ltd.", f"{_c(r, _SURNAMES)} Corp.")),
    "educational institution": lambda r: _c(r, (
        f"University of {_place(r)}", f"{_place(r)} Institute of Technology",
        f"{_c(r, _SURNAMES)} College", f"{_place(r)} State University")),
    "sports club": lambda r: _c(r, (
        f"{_place(r)} United", f"{_place(r)} F.C.", f"Real {_stem(r)}", f"{_place(r)} Rovers",
        f"Sporting {_stem(r)}", f"{_place(r)} Wanderers")),
    "political party": lambda r: _c(r, (
        f"{_c(r, _IDEOLOGY)} {_c(r, _IDEOLOGY)} Party", f"{_place(r)} {_c(r, _IDEOLOGY)} Union",
        f"Party of {_c(r, _IDEOLOGY)} {_c(r, _NOUN)}s")),
    "international organization": lambda r: _c(r, (
        f"International {_c(r, _FIELD)} Association", f"World {_c(r, _FIELD)} Council",
        f"Organisation for {_c(r, _FIELD)} Cooperation in {_place(r)}")),
    "creative work": _work,
    "award": lambda r: _c(r, (
        f"{_c(r, _SURNAMES)} Prize", f"{_place(r)} Award for Best {_c(r, _NOUN)}",
        f"{_c(r, _SURNAMES)} Medal", f"Order of the {_c(r, _ADJ)} {_c(r, _NOUN)}",
        f"{_place(r)} Prize in {_c(r, _FIELD)}")),
    "language": lambda r: ("Old " if r.random() < 0.1 else "") + _stem(r) + _c(
        r, ("ese", "ic", "ian", "ish", "i", "an")),
    "genre": lambda r: _c(r, _GENRE_PREFIX) + _c(r, _GENRE_BASE),
    "geographic feature": lambda r: f"{_place(r)} " + _c(r, ("Gorge", "Plateau", "Valley", "Cape")),
    "body of water": lambda r: f"{_place(r)} " + _c(r, ("Bay", "Sound", "Lagoon", "Strait")),
    "river": lambda r: _c(r, (f"{_place(r)} River", f"River {_stem(r)}", f"Rio {_stem(r)}")),
    "lake": lambda r: f"Lake {_place(r)}",
    "mountain": lambda r: _c(r, (f"Mount {_place(r)}", f"{_place(r)} Peak", f"Pic de {_stem(r)}")),
    "island": lambda r: _c(r, (f"{_place(r)} Island", f"Isle of {_place(r)}")),
    "architectural structure": lambda r: _c(r, (
        f"{_place(r)} Tower", f"{_c(r, _SURNAMES)} Building", f"{_place(r)} Hall")),
    "stadium": lambda r: _c(r, (f"{_place(r)} Stadium", f"Estadio {_c(r, _SURNAMES)}",
                                f"{_c(r, _SURNAMES)} Arena")),
    "museum": lambda r: _c(r, (f"{_place(r)} Museum", f"Museum of {_c(r, _NOUN)}s",
                               f"{_c(r, _SURNAMES)} Gallery")),
    "bridge": lambda r: f"{_place(r)} Bridge",
    "airport": lambda r: _c(r, (f"{_place(r)} International Airport",
                                f"{_c(r, _SURNAMES)} Airport")),
}
"""Entity name generators by kind (the nearest concept, up the first-parent chain, that has
one). Every name starts with a capital letter: concept names are lowercase."""

_SPECIAL_NAMES = (("human", "Seán O'Brien-Müller"), ("human", "René Dupont, Jr."),
                  ("organization", "Marlow & Finch (Holdings) Ltd."),
                  ("creative work", "Zoë's Café (Part II)"))
"""Names carrying the characters that break naive quoting: ``' , ( ) & - .`` and accents.
Similar names occur naturally too; these make sure every one occurs at every scale."""

_CONCEPT_MODIFIERS = (
    "regional historic modern former national local independent minor major northern southern "
    "eastern western coastal rural urban early late experimental classical contemporary "
    "medieval international private public federal colonial alpine island royal imperial "
    "amateur professional junior senior youth veteran traditional municipal provincial "
    "academic commercial industrial religious military civil digital global continental "
    "tropical arctic volcanic maritime metropolitan suburban frontier ancient baroque gothic "
    "romantic avant-garde folk popular underground mainstream emerging defunct exiled nomadic "
    "itinerant honorary self-taught award-winning bilingual secular cooperative autonomous "
    "fictional mythical legendary landlocked fortified planned abandoned restored listed "
    "protected seasonal multilingual multinational state-owned family-owned nonprofit "
    "open-air underwater riverside lakeside hilltop women's men's mixed").split()

# ---- the hand-written ontology ----------------------------------------------------------------

_FAMILIES: tuple[tuple[str, float], ...] = (
    ("human", 0.39), ("human settlement", 0.12), ("administrative territorial entity", 0.04),
    ("country", 0.012), ("organization", 0.12), ("creative work", 0.18), ("award", 0.02),
    ("language", 0.012), ("genre", 0.012), ("geographic feature", 0.05),
    ("architectural structure", 0.04))
"""Family root concepts and their share of the entities."""

_SEED_CONCEPTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("athlete", ("human",)), ("association football player", ("athlete",)),
    ("basketball player", ("athlete",)), ("tennis player", ("athlete",)),
    ("politician", ("human",)), ("actor", ("human",)), ("film actor", ("actor",)),
    ("television actor", ("actor",)), ("musician", ("human",)), ("singer", ("musician",)),
    ("guitarist", ("musician",)), ("writer", ("human",)), ("novelist", ("writer",)),
    ("poet", ("writer",)), ("singer-songwriter", ("singer", "writer")),
    ("scientist", ("human",)), ("physicist", ("scientist",)), ("chemist", ("scientist",)),
    ("film director", ("human",)),
    ("city", ("human settlement",)), ("big city", ("city",)), ("capital city", ("city",)),
    ("town", ("human settlement",)), ("village", ("human settlement",)),
    ("province", ("administrative territorial entity",)),
    ("county", ("administrative territorial entity",)),
    ("federated state", ("administrative territorial entity",)),
    ("sovereign state", ("country",)), ("historical country", ("country",)),
    ("business", ("organization",)), ("record label", ("business",)),
    ("airline", ("business",)), ("bank", ("business",)),
    ("educational institution", ("organization",)), ("university", ("educational institution",)),
    ("sports club", ("organization",)), ("association football club", ("sports club",)),
    ("basketball team", ("sports club",)), ("political party", ("organization",)),
    ("international organization", ("organization",)),
    ("film", ("creative work",)), ("feature film", ("film",)), ("animated film", ("film",)),
    ("documentary film", ("film",)), ("television series", ("creative work",)),
    ("album", ("creative work",)), ("studio album", ("album",)), ("song", ("creative work",)),
    ("literary work", ("creative work",)), ("novel", ("literary work",)),
    ("video game", ("creative work",)),
    ("film award", ("award",)), ("literary award", ("award",)), ("music award", ("award",)),
    ("science award", ("award",)),
    ("natural language", ("language",)), ("dialect", ("language",)),
    ("film genre", ("genre",)), ("music genre", ("genre",)), ("literary genre", ("genre",)),
    ("body of water", ("geographic feature",)), ("river", ("body of water",)),
    ("lake", ("body of water",)), ("mountain", ("geographic feature",)),
    ("island", ("geographic feature",)),
    ("stadium", ("architectural structure",)), ("museum", ("architectural structure",)),
    ("bridge", ("architectural structure",)), ("airport", ("architectural structure",)),
)
"""Seed concepts, each after its parents."""


@dataclass(frozen=True)
class _KeyUse:
    """A key on the entities of a concept's subtree, with probability ``prob`` each."""

    key: str
    type: str
    domain: str
    gen: Gen
    prob: float
    multi: int = 1                  # > 1: 1..multi values, each at its own "point in time"
    quals: tuple[tuple[str, float], ...] = ()   # other (qualifier key, probability) per value


@dataclass(frozen=True)
class _RelSpec:
    """Facts ``subject --name--> object`` from ``domain``'s subtree to ``range``'s."""

    name: str
    domain: str
    range: str
    prob: float                     # share of the domain's entities that are subjects
    most: int = 1                   # 1 = functional, else up to ``most`` objects per subject
    quals: tuple[tuple[str, float], ...] = ()
    symmetric: bool = False         # written both ways, as Wikidata does (spouse, border)
    skew: float = 1.0               # > 1 favours low-id ("popular") objects
    same_country: bool = False      # object must be "country"-linked to the subject


_QUALIFIER_TYPES: dict[str, str] = {
    "point in time": "date", "start time": "date", "end time": "date",
    "applies to part": "string", "position held": "string", "character role": "string",
    "academic degree": "string", "determination method": "string", "criterion used": "string",
    "place of publication": "string", "end cause": "string",
    "sport number": "quantity", "ranking": "quantity", "proportion": "quantity",
}
QUALIFIER_KEYS = tuple(_QUALIFIER_TYPES)
"""Qualifier keys; "sport number" and "ranking" are attribute keys too (same type), as some
keys are in KQA Pro; "point in time" mixes years and dates."""

_SPAN = (("start time", 0.6), ("end time", 0.4))


def _core_keys() -> list[_KeyUse]:
    K = _KeyUse
    det = ("determination method", 0.3)
    usd = "United States dollar"
    return [
        # humans
        K("date of birth", "date", "human", _birth, 0.95),
        K("date of death", "date", "human", _death, 1.0),
        K("height", "quantity", "human",
          _num(150, 205, "centimetre", alt=("metre", 0.01, 0.15, True)), 0.5),
        K("mass", "quantity", "human", _num(45, 120, "kilogram", floats=0.3), 0.3),
        K("sex or gender", "string", "human",
          _pick(("male", "female", "non-binary", "intersex"), (52, 46, 1.5, 0.5)), 0.97),
        K("number of children", "quantity", "human", _num(1, 8, zero=0.3), 0.2),
        K("social media followers", "quantity", "human", _num(100, 5e7, log=True), 0.08, 3),
        K("sport number", "quantity", "athlete", _num(1, 99), 0.6),
        # settlements, regions, countries
        K("population", "quantity", "human settlement", _num(300, 1.5e7, log=True), 0.9, 4,
          (det, ("applies to part", 0.1))),
        K("population", "quantity", "administrative territorial entity",
          _num(1e4, 3e7, log=True), 0.8, 3, (det,)),
        K("population", "quantity", "country", _num(5e4, 3e8, log=True), 0.95, 4, (det,)),
        K("area", "quantity", "human settlement", _num(1, 2500, "square kilometre", log=True, floats=0.5), 0.7),
        K("area", "quantity", "administrative territorial entity",
          _num(100, 3e5, "square kilometre", log=True, floats=0.4), 0.7),
        K("area", "quantity", "country", _num(300, 5e6, "square kilometre", log=True, floats=0.3),
          0.9, 1, (("applies to part", 0.2),)),
        K("area", "quantity", "lake", _num(0.5, 8e4, "square kilometre", log=True, floats=0.6), 0.7),
        K("elevation above sea level", "quantity", "human settlement",
          _num(1, 3000, "metre", log=True, neg=0.06, zero=0.03), 0.6),
        K("elevation above sea level", "quantity", "mountain", _num(400, 8800, "metre"), 0.95),
        K("elevation above sea level", "quantity", "lake",
          _num(1, 4000, "metre", log=True, neg=0.08, floats=0.2), 0.6),
        K("inception", "year", "human settlement", _years(1000, 1950), 0.5),
        K("inception", "year", "administrative territorial entity", _years(1500, 2010), 0.4),
        K("inception", "year", "country", _years(1000, 2011), 0.6),
        K("inception", "year", "organization", _years(1600, 2024), 0.8),
        K("inception", "year", "award", _years(1900, 2024), 0.8),
        K("inception", "year", "genre", _years(1000, 2020), 0.4),
        K("inception", "year", "architectural structure", _years(1000, 2024), 0.5),
        K("official name", "string", "human settlement", _official_name, 0.4),
        K("official name", "string", "country", _official_name, 0.8),
        K("official name", "string", "organization", _official_name, 0.3),
        K("postal code", "string", "human settlement", _code(0, 5), 0.5),
        K("local dialing code", "string", "human settlement", _code(0, 3), 0.3),
        K("licence plate code", "string", "administrative territorial entity", _code(2, 0), 0.4),
        K("ISO 3166-1 alpha-3 code", "string", "country", _iso3, 0.9),
        K("country calling code", "string", "country",
          lambda r, c: _str(f"+{1 + int(r.random() * 998)}"), 0.8),
        K("nominal GDP", "quantity", "country", _num(1e8, 2e13, usd, log=True), 0.8, 3),
        K("Human Development Index", "quantity", "country", _num(0.3, 0.96, floats=1.0), 0.7, 3),
        K("life expectancy", "quantity", "country", _num(45, 85, "year", floats=0.8), 0.6),
        K("total fertility rate", "quantity", "country", _num(1, 7, floats=1.0), 0.5),
        # organizations
        K("number of employees", "quantity", "business", _num(3, 5e5, log=True), 0.5, 3),
        K("total revenue", "quantity", "business",
          _num(1e5, 5e11, usd, log=True, alt=("euro", 0.9, 0.2, False)), 0.5, 2),
        K("net profit", "quantity", "business", _num(1e4, 5e10, usd, log=True, neg=0.25), 0.4, 2),
        K("official website", "string", "organization", _website, 0.5),
        K("ranking", "quantity", "university", _num(1, 500), 0.5, 3, (("criterion used", 0.5),)),
        K("ranking", "quantity", "sports club", _num(1, 40), 0.5, 3),
        K("students count", "quantity", "university", _num(500, 80000, log=True), 0.6, 3),
        K("member count", "quantity", "political party", _num(100, 2e6, log=True), 0.5, 2),
        # creative works, awards, languages
        K("publication date", "date", "creative work", _dates(1450, 2025), 0.85, 1,
          (("place of publication", 0.3),)),
        K("duration", "quantity", "film", _num(60, 210, "minute"), 0.8),
        K("duration", "quantity", "album", _num(25, 90, "minute"), 0.6),
        K("duration", "quantity", "song", _num(1.5, 9, "minute", floats=1.0), 0.6),
        K("box office", "quantity", "film", _num(1e4, 2.5e9, usd, log=True), 0.3),
        K("cost", "quantity", "film", _num(1e5, 3e8, usd, log=True), 0.25),
        K("number of episodes", "quantity", "television series", _num(6, 500, log=True), 0.8),
        K("number of seasons", "quantity", "television series", _num(1, 30, log=True), 0.6),
        K("number of pages", "quantity", "literary work", _num(50, 1200), 0.6),
        K("prize money", "quantity", "award",
          _num(1000, 1.5e6, usd, log=True, alt=("euro", 0.9, 0.3, False)), 0.5),
        K("number of speakers", "quantity", "language", _num(1000, 1e9, log=True), 0.8, 2),
        K("ISO 639-3 code", "string", "language",
          lambda r, c: _str("".join(chr(97 + int(r.random() * 26)) for _ in range(3))), 0.7),
        # geography and structures
        K("length", "quantity", "river", _num(10, 6500, "kilometre", log=True, floats=0.3), 0.9),
        K("length", "quantity", "bridge", _num(20, 5000, "metre", log=True, floats=0.5), 0.8),
        K("discharge", "quantity", "river",
          _num(1, 2e5, "cubic metre per second", log=True, floats=0.7), 0.5),
        K("maximum depth", "quantity", "lake", _num(2, 1600, "metre", log=True), 0.5),
        K("height", "quantity", "architectural structure",
          _num(8, 600, "metre", log=True, floats=0.3), 0.6),
        K("maximum capacity", "quantity", "stadium", _num(1000, 100000), 0.8),
        K("date of official opening", "date", "architectural structure", _dates(1800, 2025), 0.4),
        K("visitors per year", "quantity", "museum", _num(1000, 9e6, log=True), 0.5, 3),
    ]


def _core_relations() -> list[_RelSpec]:
    R = _RelSpec
    pit = ("point in time", 0.9)
    return [
        R("place of birth", "human", "human settlement", 0.8, skew=1.5),
        R("place of death", "human", "human settlement", 0.25, skew=1.5),
        R("country of citizenship", "human", "country", 0.9, 2, (("start time", 0.05),), skew=1.5),
        R("spouse", "human", "human", 0.08, 1, _SPAN + (("end cause", 0.2),), symmetric=True),
        R("child", "human", "human", 0.06, 3),
        R("educated at", "human", "university", 0.3, 2, _SPAN + (("academic degree", 0.5),)),
        R("employer", "human", "organization", 0.25, 2, _SPAN + (("position held", 0.5),)),
        R("member of sports team", "athlete", "sports club", 0.9, 4,
          (("start time", 0.8), ("end time", 0.6), ("sport number", 0.6))),
        R("member of political party", "politician", "political party", 0.8, 2, _SPAN),
        R("award received", "human", "award", 0.12, 3, (pit,)),
        R("nominated for", "human", "award", 0.08, 2, (pit,)),
        R("residence", "human", "human settlement", 0.15, 2, _SPAN),
        R("notable work", "writer", "literary work", 0.6, 3),
        R("country", "human settlement", "country", 0.95, skew=1.3),
        R("located in the administrative territorial entity", "human settlement",
          "administrative territorial entity", 0.7, 1, (("start time", 0.05),)),
        R("twinned administrative body", "human settlement", "human settlement", 0.08, 3,
          (("start time", 0.5),), symmetric=True),
        R("located in or next to body of water", "human settlement", "body of water", 0.2, 2),
        R("country", "administrative territorial entity", "country", 0.95),
        R("capital", "administrative territorial entity", "human settlement", 0.4),
        R("capital", "country", "human settlement", 0.9, 1, (("start time", 0.15),),
          same_country=True),
        R("shares border with", "country", "country", 0.8, 3, symmetric=True),
        R("diplomatic relation", "country", "country", 0.5, 4, symmetric=True),
        R("head of state", "country", "politician", 0.5, 2, _SPAN),
        R("member of", "country", "international organization", 0.6, 4, (("start time", 0.7),)),
        R("official language", "country", "language", 0.9, 3),
        R("headquarters location", "organization", "human settlement", 0.6, skew=1.5),
        R("country", "organization", "country", 0.6),
        R("founded by", "organization", "human", 0.2, 3),
        R("parent organization", "business", "organization", 0.15),
        R("owned by", "business", "organization", 0.15, 2, (("proportion", 0.7),)),
        R("home venue", "sports club", "stadium", 0.6, 1, (("start time", 0.2),)),
        R("director", "film", "film director", 0.85, skew=1.3),
        R("cast member", "film", "actor", 0.8, 6, (("character role", 0.5),)),
        R("cast member", "television series", "actor", 0.8, 5, (("character role", 0.5),)),
        R("screenwriter", "film", "writer", 0.4, 2),
        R("performer", "album", "musician", 0.9, 2),
        R("performer", "song", "musician", 0.9, 2),
        R("author", "literary work", "writer", 0.9, 2),
        R("genre", "creative work", "genre", 0.7, 2, skew=1.5),
        R("country of origin", "creative work", "country", 0.6, skew=1.5),
        R("original language of film or television show", "film", "language", 0.6),
        R("original language of film or television show", "television series", "language", 0.6),
        R("language of work or name", "literary work", "language", 0.6),
        R("production company", "film", "business", 0.4, 2),
        R("record label", "album", "record label", 0.6),
        R("publisher", "literary work", "business", 0.5),
        R("publisher", "video game", "business", 0.5),
        R("award received", "creative work", "award", 0.08, 2, (pit,)),
        R("nominated for", "film", "award", 0.1, 2, (pit,)),
        R("followed by", "creative work", "creative work", 0.05),
        R("conferred by", "award", "organization", 0.7),
        R("indigenous to", "language", "country", 0.4, 2),
        R("country", "geographic feature", "country", 0.8, 2),
        R("mouth of the watercourse", "river", "body of water", 0.5),
        R("located in the administrative territorial entity", "geographic feature",
          "administrative territorial entity", 0.3),
        R("location", "architectural structure", "human settlement", 0.8),
        R("country", "architectural structure", "country", 0.5),
        R("architect", "architectural structure", "human", 0.2, 2),
        R("occupant", "stadium", "sports club", 0.5, 2, (("start time", 0.5),)),
        R("place served by transport hub", "airport", "human settlement", 0.9, 2),
        R("crosses", "bridge", "river", 0.8),
    ]


# ---- synthetic vocabulary ---------------------------------------------------------------------

_KEY_MODIFIERS = (
    "annual maximum minimum average total median nominal estimated peak net gross design "
    "operating reported official projected recorded historical initial current planned "
    "declared measured certified seasonal daily monthly registered audited typical "
    "long-term").split()
_QUANTITY_NOUNS: tuple[tuple[str, str, float, float, float, float], ...] = (
    # noun, unit, low, high, share of floats, share of negatives
    ("capacity", "1", 10, 1e5, 0, 0), ("width", "metre", 1, 3000, 0.4, 0),
    ("depth", "metre", 1, 3000, 0.4, 0), ("volume", "cubic metre", 1, 1e7, 0.2, 0),
    ("speed", "kilometre per hour", 5, 900, 0.3, 0),
    ("budget", "United States dollar", 1e4, 1e10, 0, 0), ("turnover", "euro", 1e4, 1e10, 0, 0),
    ("income", "United States dollar", 1e3, 1e9, 0, 0.05),
    ("output", "megawatt", 0.5, 5000, 0.5, 0), ("density", "kilogram per cubic metre", 1, 2e4, 0.5, 0),
    ("weight", "kilogram", 0.5, 1e5, 0.5, 0), ("score", "1", 0, 100, 0.5, 0),
    ("rating", "1", 1, 10, 1, 0), ("count", "1", 1, 1e5, 0, 0),
    ("yield", "tonne", 1, 1e6, 0.3, 0), ("rainfall", "millimetre", 10, 4000, 0.2, 0),
    ("temperature", "degree Celsius", 0, 45, 0.6, 0.25), ("duration", "minute", 1, 600, 0.2, 0),
    ("distance", "kilometre", 0.5, 2e4, 0.4, 0), ("altitude", "metre", 1, 5000, 0.2, 0.08),
    ("power", "kilowatt", 1, 1e6, 0.3, 0), ("frequency", "hertz", 1, 1e9, 0.3, 0),
    ("pressure", "pascal", 100, 1e6, 0.3, 0), ("share", "percent", 0.1, 100, 0.8, 0),
    ("growth rate", "percent", 0.1, 40, 0.9, 0.3), ("balance", "United States dollar", 1e3, 1e9, 0, 0.3),
    ("membership", "1", 10, 1e6, 0, 0), ("attendance", "1", 10, 1e5, 0, 0),
    ("circulation", "1", 100, 5e6, 0, 0), ("enrollment", "1", 10, 5e4, 0, 0),
    ("fleet size", "1", 1, 900, 0, 0), ("emissions", "tonne", 1, 1e7, 0.3, 0),
    ("consumption", "kilowatt hour", 1, 1e8, 0.3, 0), ("surface", "square kilometre", 0.01, 1e4, 0.6, 0),
    ("thickness", "millimetre", 0.1, 500, 0.6, 0), ("diameter", "metre", 0.1, 1e4, 0.5, 0),
    ("age", "year", 1, 120, 0, 0), ("lifespan", "year", 1, 500, 0.2, 0), ("staff", "1", 1, 1e5, 0, 0),
    ("debt", "United States dollar", 1e3, 1e12, 0, 0), ("price", "euro", 0.5, 1e7, 0.6, 0),
    ("slope", "percent", 0, 45, 0.7, 0.1),
)
_ALT_UNITS = {"metre": ("kilometre", 0.001), "kilometre": ("metre", 1000.0),
              "United States dollar": ("euro", 0.9), "kilogram": ("tonne", 0.001),
              "minute": ("hour", 1 / 60), "tonne": ("kilogram", 1000.0)}
"""Second units for synthetic quantity keys: (unit, conversion factor)."""
_STRING_NOUNS = ("code", "designation", "motto", "nickname", "classification", "status", "label",
                 "identifier", "registry number", "abbreviation", "call sign", "catalogue code")
_EVENTS = ("foundation dissolution renovation publication abolition discovery reform "
           "restoration census completion merger accreditation expansion closure relocation "
           "reopening electrification modernisation certification designation rebranding "
           "privatisation nationalisation demolition excavation survey debut retirement "
           "coronation enthronement consecration incorporation independence annexation "
           "unification partition settlement recognition listing").split()
_TIME_MODIFIERS = ("first", "last", "latest", "planned", "official", "recorded", "earliest",
                   "provisional")
_STATUS_WORDS = ("active", "inactive", "protected", "listed", "grade I", "grade II", "heritage",
                 "provisional", "suspended", "dormant", "certified", "pending", "category A",
                 "category B", "class 1", "class 2", "restricted", "open", "closed", "historic")
_REL_MODIFIERS = ("primary former main associated regional official notable secondary honorary "
                  "founding principal joint exclusive historic current partner sister rival "
                  "twin allied affiliated contracted licensed supporting guest visiting "
                  "resident senior junior").split()
_REL_NOUNS = ("sponsor supplier operator owner successor predecessor affiliate venue founder "
              "patron subsidiary archive publisher distributor broadcaster licensee contractor "
              "mentor student collaborator ally host participant beneficiary headquarters "
              "investor client tenant landlord shareholder trustee advisor benefactor "
              "correspondent delegate envoy donor heir namesake custodian caretaker "
              "archivist curator consultant").split()


def _phrases(rng: random.Random, mods: Sequence[str], heads: Sequence[str], n: int,
             taken: set[str], fmt: str = "{m} {h}") -> list[str]:
    """``n`` new distinct phrases ``fmt(mod, head)`` in a seeded order; when one modifier is
    not enough (huge scales), two."""
    if n <= 0:
        return []
    pairs = [(m, h) for h in heads for m in mods]
    rng.shuffle(pairs)
    out: list[str] = []
    for m, h in pairs:
        phrase = fmt.format(m=m, h=h)
        if phrase not in taken:
            taken.add(phrase)
            out.append(phrase)
            if len(out) == n:
                return out
    while len(out) < n:
        m1, m2 = _c(rng, mods), _c(rng, mods)
        phrase = fmt.format(m=f"{m1} {m2}", h=_c(rng, heads))
        if m1 != m2 and phrase not in taken:
            taken.add(phrase)
            out.append(phrase)
    return out


def _roman(n: int) -> str:
    out = []
    for value, sym in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                       (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out.append(sym)
            n -= value
    return "".join(out)


def vocabulary_sizes(scale: float) -> dict[str, int]:
    """Target sizes at ``scale``: entities (linear) and vocabularies (sublinear, floored)."""
    grow = min(scale, 1.0) ** 0.4 * max(scale, 1.0) ** 0.1
    return {"entities": max(round(BASE_ENTITIES * scale), MIN_ENTITIES),
            "concepts": max(MIN_CONCEPTS, round(BASE_CONCEPTS * grow)),
            "relations": max(MIN_RELATIONS, round(BASE_RELATIONS * grow)),
            "keys": max(MIN_KEYS, round(BASE_KEYS * grow))}


def _check(scale: object, seed: object) -> tuple[float, int]:
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise ScaleError(f"scale must be a number, got {type(scale).__name__}")
    if not math.isfinite(float(scale)) or not 0 < float(scale) <= MAX_SCALE:
        raise ScaleError(f"scale must be > 0 and <= {MAX_SCALE:g}, got {scale!r}")
    # random.Random(-s) equals random.Random(s): refuse negative seeds rather than alias them.
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ScaleError(f"seed must be a non-negative integer, got {seed!r}")
    return float(scale), int(seed)


# ---- the generator ------------------------------------------------------------------------------

def _copy_quals(quals: dict) -> dict:
    """An equal qualifier dict sharing nothing with ``quals`` (``kopl`` rewrites them)."""
    if not quals:
        return {}
    return {k: [dict(v) for v in vs] for k, vs in quals.items()}


class _Builder:
    def __init__(self, scale: float, seed: int):
        self.sizes = vocabulary_sizes(scale)
        master = random.Random(seed)
        # One generator per stage, drawn in a fixed order.
        self.rngs = {stage: random.Random(master.getrandbits(64)) for stage in (
            "concepts", "entities", "names", "keys", "attributes", "relations")}
        self.c_name: list[str] = []
        self.c_parents: list[list[int]] = []
        self.c_family: list[int] = []
        self.c_kind: list[str] = []
        self.c_depth: list[int] = []
        self.c_index: dict[str, int] = {}

    # -- concepts
    def _add_concept(self, name: str, parents: list[int], family: int) -> int:
        i = len(self.c_name)
        self.c_name.append(name)
        self.c_parents.append(parents)
        self.c_family.append(family)
        self.c_kind.append(name if name in _NAMERS else self.c_kind[parents[0]])
        self.c_depth.append(1 + max(self.c_depth[p] for p in parents) if parents else 0)
        self.c_index[name] = i
        return i

    def build_concepts(self) -> None:
        rng = self.rngs["concepts"]
        for f, (root, _) in enumerate(_FAMILIES):
            self._add_concept(root, [], f)
        for name, parents in _SEED_CONCEPTS:
            ps = [self.c_index[p] for p in parents]
            self._add_concept(name, ps, self.c_family[ps[0]])
        self.n_hand = len(self.c_name)
        # Families get grown concepts in proportion to share ** 0.6 (small families still
        # get a few), each grown concept under a random concept of its family.
        weights = [share ** 0.6 for _, share in _FAMILIES]
        cum = [sum(weights[:i + 1]) for i in range(len(weights))]
        by_family: list[list[int]] = [[] for _ in _FAMILIES]
        for i, f in enumerate(self.c_family):
            by_family[f].append(i)
        misses = 0
        while len(self.c_name) < self.sizes["concepts"] and misses < 100_000:
            f = rng.choices(range(len(_FAMILIES)), cum_weights=cum)[0]
            # Hand-written parents weigh 4, grown ones 1: most grown concepts stay shallow
            # (short names) and a few chains reach depth 5.
            pool = [i for i in by_family[f] if self.c_depth[i] <= 4]
            pool_cum, acc = [], 0.0
            for i in pool:
                acc += 4.0 if i < self.n_hand else 1.0
                pool_cum.append(acc)
            parent = rng.choices(pool, cum_weights=pool_cum)[0]
            mod = _c(rng, _CONCEPT_MODIFIERS)
            name = f"{mod} {self.c_name[parent]}"
            if mod in self.c_name[parent].split() or name in self.c_index:
                misses += 1
                continue
            parents = [parent]
            if rng.random() < 0.08:     # a second parent, always an earlier concept: no cycle
                other = pool[int(rng.random() * len(pool))]
                if other != parent and other not in self._ancestors_of(parent):
                    parents.append(other)
            by_family[f].append(self._add_concept(name, parents, f))
        self.by_family = by_family
        # Ancestors (self included) of every concept, in index order.
        self.c_anc: list[list[int]] = []
        for i in range(len(self.c_name)):
            found = {i}
            for p in self.c_parents[i]:
                found.update(self.c_anc[p])
            self.c_anc.append(sorted(found))

    def _ancestors_of(self, i: int) -> list[int]:
        seen, todo = [i], [i]
        while todo:
            for p in self.c_parents[todo.pop()]:
                if p not in seen:
                    seen.append(p)
                    todo.append(p)
        return seen

    # -- entities and their concepts
    def build_entities(self) -> None:
        rng = self.rngs["entities"]
        n = self.sizes["entities"]
        shares = [share for _, share in _FAMILIES]
        total = sum(shares)
        counts = [max(MIN_PER_FAMILY, int(n * s / total)) for s in shares]
        counts[0] += n - sum(counts)     # humans absorb the rounding
        families = [f for f, k in enumerate(counts) for _ in range(k)]
        rng.shuffle(families)            # ids interleave the families, as Wikidata's do
        self.e_family = families
        self.n = n
        members_of_family: list[list[int]] = [[] for _ in _FAMILIES]
        for e, f in enumerate(families):
            members_of_family[f].append(e)
        # Weights within a family: root 6, seeds 3, grown concepts 1, times a random factor.
        cums: list[list[float]] = []
        for f, cs in enumerate(self.by_family):
            acc, cum = 0.0, []
            for c in cs:
                base = 6.0 if not self.c_parents[c] else 3.0 if c < self.n_hand else 1.0
                acc += base * (0.5 + rng.random())
                cum.append(acc)
            cums.append(cum)
        direct: list[list[int]] = [[] for _ in range(n)]
        seeded: set[int] = set()
        for f, es in enumerate(members_of_family):
            cs = self.by_family[f]
            seeds = [c for c in cs if 0 < c < self.n_hand]
            rng.shuffle(seeds)
            for k, e in enumerate(es):
                if k < len(seeds):       # every seed concept first: hand-written keys occur
                    first = seeds[k]
                    seeded.add(e)
                else:
                    first = rng.choices(cs, cum_weights=cums[f])[0]
                direct[e] = [first]
                if rng.random() < 0.1:
                    second = rng.choices(cs, cum_weights=cums[f])[0]
                    if second not in self.c_anc[first] and first not in self.c_anc[second]:
                        direct[e].append(second)
        # ~1% of the entities have no concept (never one that populates a seed).
        candidates = [e for e in range(n) if e not in seeded]
        for e in rng.sample(candidates, min(len(candidates), max(1, round(0.01 * n)))):
            direct[e] = []
        self.direct = direct
        # Subtree members of every concept (entities without a concept count under their
        # family root for generation only: they get keys and relations, not a type).
        self.e_anc: list[list[int]] = []
        self.members: list[list[int]] = [[] for _ in self.c_name]
        for e in range(n):
            cs = direct[e] or [self.by_family[families[e]][0]]
            anc = self.c_anc[cs[0]] if len(cs) == 1 else sorted(set(self.c_anc[cs[0]] + self.c_anc[cs[1]]))
            self.e_anc.append(anc)
            for c in anc:
                self.members[c].append(e)
        self.member_sets: dict[int, set[int]] = {}

    def member_set(self, c: int) -> set[int]:
        if c not in self.member_sets:
            self.member_sets[c] = set(self.members[c])
        return self.member_sets[c]

    # -- names
    def build_names(self) -> None:
        rng = self.rngs["names"]
        used: set[str] = set()
        names: list[str | None] = [None] * self.n
        for family, name in _SPECIAL_NAMES:
            f = [r for r, _ in _FAMILIES].index(family)
            pool = [e for e in range(self.n) if self.e_family[e] == f and names[e] is None]
            e = pool[int(rng.random() * len(pool))]
            names[e] = name
            used.add(name)
        suffix: dict[str, int] = {}
        for e in range(self.n):
            if names[e] is not None:
                continue
            cs = self.direct[e] or [self.by_family[self.e_family[e]][0]]
            namer = _NAMERS[self.c_kind[cs[0]]]
            for _ in range(12):
                name = namer(rng)
                if name not in used:
                    break
            else:                       # crowded name space: "<name> II", "<name> III", ...
                base = name
                k = suffix.get(base, 1)
                while name in used:
                    k += 1
                    name = f"{base} {_roman(k)}"
                suffix[base] = k
            names[e] = name
            used.add(name)
        # ~4% of the entities share a name, in groups of 2 or 3 within a family: a group
        # takes its leader's name (the names it replaces are simply dropped).
        special = {name for _, name in _SPECIAL_NAMES}
        free = [e for e in range(self.n) if names[e] not in special]
        rng.shuffle(free)
        by_family: dict[int, list[int]] = {}
        for e in free:
            by_family.setdefault(self.e_family[e], []).append(e)
        grouped: set[int] = set()
        target, shared = max(5, round(0.04 * self.n)), 0
        for leader in free:
            if shared >= target:
                break
            if leader in grouped:
                continue
            pool = by_family[self.e_family[leader]]
            group = [leader]
            size = 3 if rng.random() < 0.3 else 2
            while pool and len(group) < size:
                other = pool.pop()
                if other not in grouped and other != leader:
                    group.append(other)
            if len(group) < 2:
                continue
            grouped.update(group)
            for other in group[1:]:
                names[other] = names[leader]
            shared += len(group)
        self.names: list[str] = names  # type: ignore[assignment]
        self.country_names = [names[e] for e in self.members[self.c_index["country"]]] or ["Nowhere"]

    # -- keys
    def build_keys(self) -> None:
        rng = self.rngs["keys"]
        uses = _core_keys()
        types = dict(_QUALIFIER_TYPES)
        for u in uses:
            if types.setdefault(u.key, u.type) != u.type:
                raise AssertionError(f"key {u.key!r} has two types")  # a bug in the tables
        taken = set(types) | {r.name for r in _core_relations()}
        # Synthetic keys go below the family roots (the roots have the hand-written keys).
        populated = [c for c in range(len(self.c_name)) if self.members[c] and self.c_parents[c]]
        n_new = max(0, self.sizes["keys"] - len(types))
        n_year = n_date = n_new * 15 // 100
        n_str = n_new * 15 // 100
        n_qty = n_new - n_year - n_date - n_str
        qty_heads = [q[0] for q in _QUANTITY_NOUNS]
        qty_spec = {q[0]: q for q in _QUANTITY_NOUNS}
        new: list[tuple[str, str]] = []
        new += [(k, "quantity") for k in _phrases(rng, _KEY_MODIFIERS, qty_heads, n_qty, taken)]
        new += [(k, "string") for k in _phrases(rng, _KEY_MODIFIERS, _STRING_NOUNS, n_str, taken)]
        new += [(k, "year") for k in _phrases(rng, _TIME_MODIFIERS, _EVENTS, n_year, taken,
                                              "year of {m} {h}")]
        new += [(k, "date") for k in _phrases(rng, _TIME_MODIFIERS, _EVENTS, n_date, taken,
                                              "{m} {h} date")]
        rng.shuffle(new)
        for key, typ in new:
            domain = self.c_name[populated[int(rng.random() * len(populated))]]
            prob = 0.3 + 0.6 * rng.random()
            multi, quals = 1, ()
            if typ == "quantity":
                head = next(h for h in sorted(qty_heads, key=len, reverse=True) if key.endswith(h))
                _, unit, lo, hi, floats, neg = qty_spec[head]
                alt = None
                if unit in _ALT_UNITS and rng.random() < 0.08:   # a few with a second unit
                    alt_unit, factor = _ALT_UNITS[unit]
                    alt = (alt_unit, factor, 0.3, factor < 1)
                gen = _num(lo or 0.01, hi, unit, log=hi / max(lo, 0.01) > 1000, floats=floats,
                           neg=neg, zero=0.03 if unit == "1" else 0.0, alt=alt)
                if rng.random() < 0.12:
                    multi = 2 + int(rng.random() * 3)
                elif rng.random() < 0.1:
                    quals = (("applies to part", 0.5),)
            elif typ == "string":
                if key.endswith(("code", "identifier", "registry number", "call sign", "abbreviation")):
                    gen = _code(1 + int(rng.random() * 3), int(rng.random() * 5))
                else:
                    pool = rng.sample(_STATUS_WORDS, 3 + int(rng.random() * 8))
                    gen = _pick(pool)
            elif typ == "year":
                lo = 1000 + int(rng.random() * 900)
                gen = _years(lo, 2025)
            else:
                lo = 1000 + int(rng.random() * 900)
                gen = _dates(lo, 2025)
                if rng.random() < 0.15:
                    quals = (("determination method", 0.6),)
            uses.append(_KeyUse(key, typ, domain, gen, prob, multi, quals))
            types[key] = typ
        self.uses_by_concept: list[list[_KeyUse]] = [[] for _ in self.c_name]
        for u in uses:
            self.uses_by_concept[self.c_index[u.domain]].append(u)
        self.key_uses = uses

    # -- attributes
    def _qualifiers(self, rng: random.Random, specs: Sequence[tuple[str, float]], ctx: dict) -> dict:
        quals: dict = {}
        if not specs:
            return quals
        start: int | None = None
        for key, prob in specs:
            if rng.random() >= prob:
                continue
            if key == "start time":
                start = _ordinal_in(rng, 1900, 2020)
                quals[key] = [_date(start)]
            elif key == "end time":
                lo = start + 30 if start is not None else _year_start(1900)
                hi = min(_LAST, lo + 30 * 365)
                quals[key] = [_date(lo + int(rng.random() * (hi - lo + 1)))]
            else:
                quals[key] = [_QUALIFIER_GENS[key](self, rng, ctx)]
        return quals

    def build_attributes(self) -> None:
        rng = self.rngs["attributes"]
        self.attributes: list[list[dict]] = []
        have: set[int] = set()          # ids of the key uses that produced a value
        for e in range(self.n):
            ctx = {"name": self.names[e]}
            attrs: list[dict] = []
            for c in self.e_anc[e]:
                for u in self.uses_by_concept[c]:
                    if rng.random() < u.prob:
                        if self._emit(rng, u, ctx, attrs):
                            have.add(id(u))
            self.attributes.append(attrs)
        # Every key with a populated domain occurs at least once.
        for u in self.key_uses:
            if id(u) in have:
                continue
            ms = self.members[self.c_index[u.domain]]
            for _ in range(20 if ms else 0):
                e = ms[int(rng.random() * len(ms))]
                ctx = {"name": self.names[e], "born": 1800}
                if self._emit(rng, u, ctx, self.attributes[e]):
                    break

    def _emit(self, rng: random.Random, u: _KeyUse, ctx: dict, attrs: list[dict]) -> bool:
        if u.multi > 1:
            k = 1 + int(rng.random() ** 1.5 * u.multi)
            years = sorted(rng.sample(range(1950, 2026), k))
            for y in years:
                value = u.gen(rng, ctx)
                quals = {"point in time": [_year(y) if rng.random() < 0.5 else _date(_day_of(rng, y))]}
                quals.update(self._qualifiers(rng, u.quals, ctx))
                attrs.append({"key": u.key, "value": value, "qualifiers": quals})
            return True
        value = u.gen(rng, ctx)
        if value is None:
            return False
        attrs.append({"key": u.key, "value": value, "qualifiers": self._qualifiers(rng, u.quals, ctx)})
        return True

    # -- relations
    def build_relations(self) -> None:
        rng = self.rngs["relations"]
        specs = _core_relations()
        taken = {s.name for s in specs} | {u.key for u in self.key_uses} | set(_QUALIFIER_TYPES)
        n_names = len({s.name for s in specs})
        populated = [c for c in range(len(self.c_name)) if self.members[c]]
        subjects = [c for c in populated if self.c_parents[c]]
        for name in _phrases(rng, _REL_MODIFIERS, _REL_NOUNS, max(0, self.sizes["relations"] - n_names), taken):
            domain = subjects[int(rng.random() * len(subjects))]
            if rng.random() < 0.5:
                pool = [c for c in populated if self.c_family[c] == self.c_family[domain]]
            else:
                pool = populated
            rng_ = pool[int(rng.random() * len(pool))]
            r = rng.random()
            quals = (_SPAN if r < 0.2 else (("point in time", 0.6),) if r < 0.3
                     else (("ranking", 0.5),) if r < 0.33 else ())
            most = 1 if rng.random() < 0.4 else 2 + int(rng.random() * 3)
            specs.append(_RelSpec(name, self.c_name[domain], self.c_name[rng_], 0.1 + 0.5 * rng.random(),
                                  most, quals, skew=1.0 + rng.random()))
        self.relations: list[list[dict]] = [[] for _ in range(self.n)]
        seen: dict[str, set[tuple[int, int]]] = {}
        country_of: dict[int, list[int]] = {}      # country -> subjects linked by "country"
        for s in specs:
            heads = self.members[self.c_index[s.domain]]
            tails = self.members[self.c_index[s.range]]
            pairs = seen.setdefault(s.name, set())
            if not tails:
                continue
            made = 0
            for h in heads:
                if rng.random() >= s.prob:
                    continue
                pool = tails
                if s.same_country:
                    tail_set = self.member_set(self.c_index[s.range])
                    pool = [t for t in country_of.get(h, []) if t in tail_set] or tails
                k = 1 if s.most == 1 else 1 + int(rng.random() ** 2 * s.most)
                for _ in range(k):
                    made += self._try_fact(rng, s, h, pool, pairs, country_of)
            if not made and heads:                 # every relation occurs at least once
                for _ in range(50):
                    h = heads[int(rng.random() * len(heads))]
                    if self._try_fact(rng, s, h, tails, pairs, country_of):
                        break

    def _try_fact(self, rng: random.Random, s: _RelSpec, h: int, pool: list[int],
                  pairs: set[tuple[int, int]], country_of: dict[int, list[int]]) -> int:
        for _ in range(3):
            t = pool[int(len(pool) * rng.random() ** s.skew)]
            if t != h and (h, t) not in pairs:
                break
        else:
            return 0
        quals = self._qualifiers(rng, s.quals, {"name": self.names[h]})
        self._write(s.name, h, t, quals, pairs)
        if s.name == "country":
            country_of.setdefault(t, []).append(h)
        if s.symmetric and (t, h) not in pairs:
            self._write(s.name, t, h, _copy_quals(quals), pairs)
        return 1

    def _write(self, name: str, h: int, t: int, quals: dict, pairs: set[tuple[int, int]]) -> None:
        pairs.add((h, t))
        self.relations[h].append({"relation": name, "direction": "forward", "object": f"Q{t + 1}",
                                  "qualifiers": quals})
        self.relations[t].append({"relation": name, "direction": "backward", "object": f"Q{h + 1}",
                                  "qualifiers": _copy_quals(quals)})

    # -- output
    def build(self) -> dict:
        self.build_concepts()
        self.build_entities()
        self.build_names()
        self.build_keys()
        self.build_attributes()
        self.build_relations()
        concepts = {f"C{i + 1}": {"name": self.c_name[i], "subclassOf": [f"C{p + 1}" for p in ps]}
                    for i, ps in enumerate(self.c_parents)}
        entities = {f"Q{e + 1}": {"name": self.names[e],
                                  "instanceOf": [f"C{c + 1}" for c in self.direct[e]],
                                  "attributes": self.attributes[e],
                                  "relations": self.relations[e]}
                    for e in range(self.n)}
        return {"concepts": concepts, "entities": entities}


_ROLES = ("Narrator", "Himself", "Herself", "The Stranger", "Detective", "The Captain")
_QUALIFIER_GENS: dict[str, Callable[[_Builder, random.Random, dict], Value]] = {
    "point in time": lambda b, r, c: (_year(1950 + int(r.random() * 76)) if r.random() < 0.5
                                      else _date(_ordinal_in(r, 1950, 2025))),
    "applies to part": lambda b, r, c: _str(_c(r, ("land", "water", "urban area", "city proper",
                                                   "metropolitan area", "main island"))),
    "position held": lambda b, r, c: _str(_c(r, ("chief executive officer", "chairperson",
                                                 "director", "treasurer", "head coach",
                                                 "spokesperson", "founder", "secretary"))),
    "character role": lambda b, r, c: _str(_c(r, _GIVEN) if r.random() < 0.7 else _c(r, _ROLES)),
    "academic degree": lambda b, r, c: _str(_c(r, ("Bachelor of Arts", "Bachelor of Science",
                                                   "Master of Arts", "Master of Science",
                                                   "Doctor of Philosophy"))),
    "determination method": lambda b, r, c: _str(_c(r, ("census", "estimation", "register",
                                                         "survey"))),
    "criterion used": lambda b, r, c: _str(_c(r, ("academic reputation", "research output",
                                                  "employer reputation", "citations"))),
    "place of publication": lambda b, r, c: _str(_c(r, b.country_names)),
    "end cause": lambda b, r, c: _str(_c(r, ("death", "divorce", "resignation", "retirement",
                                             "dissolution"))),
    "sport number": lambda b, r, c: _qty(1 + int(r.random() * 99)),
    "ranking": lambda b, r, c: _qty(1 + int(r.random() * 200)),
    "proportion": lambda b, r, c: _qty(_number(1 + 99 * r.random(), r.random() < 0.6), "percent"),
}


def generate(scale: float = 1.0, seed: int = 0) -> dict:
    """A synthetic KB of KQA Pro's shape in KQA Pro's KB JSON format (see the module
    docstring). Equal ``(scale, seed)`` give equal dicts in any process.

    Raises :class:`ScaleError` (a :class:`~ontology.errors.ConfigError`) unless
    ``0 < scale <= 100`` and ``seed`` is a non-negative integer.
    """
    scale, seed = _check(scale, seed)
    return _Builder(scale, seed).build()
