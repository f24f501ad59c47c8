"""What ``synkqa bench`` runs: the engines (:data:`ENGINES`, one :class:`EngineSpec` each,
with the caps that keep slow engines' share of the work bounded), the parsing of
``--engines`` and ``--scale``, and :class:`BenchConfig`.

Plain data with no imports from the rest of the package: every other module of it may
read these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kopl2sparql.errors import ConfigError, unknown_name_message


# ---- engines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineSpec:
    """One engine: what it is and how much of the work it gets.

    ``caps`` bounds the programs per work item for slow engines (the first programs of
    each list, so they are the same programs native ran), ``large_caps`` from scale
    :data:`LARGE_SCALE` on; ``max_scale`` is the largest scale it is run at (with the
    reason in ``max_scale_reason``).
    """

    name: str
    title: str
    family: str                    # "ours", "sparql", "peer"
    what: str
    caps: dict = field(default_factory=dict)
    max_scale: int | None = None
    max_scale_reason: str = ""
    large_caps: dict | None = None          # caps from LARGE_SCALE on (engines that slow down with the KB)

    def caps_at(self, scale: int) -> dict:
        return self.large_caps if self.large_caps is not None and scale >= LARGE_SCALE else self.caps


LARGE_SCALE = 100

HUGE_SCALE = 300
"""From this scale on (2.4 M entities) the parts of the work that measure something other
than a query's latency are cut by default (:meth:`BenchConfig.sizes`): the gold batch to
:data:`HUGE_BATCH` programs and EV-TC off (it trains a ranker on the dataset's questions,
which says nothing new about a large KB). ``--batch`` and ``--evtc`` still set them."""
HUGE_BATCH = 10_000

NATIVE_BASE_MB = 750.0
NATIVE_MB_PER_SCALE = 13.2
"""Native's peak resident memory is about ``NATIVE_BASE_MB + NATIVE_MB_PER_SCALE * scale``
(750 MB at scale 1, 1,739 at 100 in the full table of docs/BENCH.md; 13,869 MB at scale 1000,
"Beyond VisKoP's scale": the index's build peaks above what it keeps). The bench checks it
against the memory it may use before loading native (:func:`native_fits`)."""


def native_fits(scale: int, available_mb: float | None) -> tuple[bool, str]:
    """Whether native's extrapolated peak fits in ``available_mb``, and the figures as a sentence."""
    need = NATIVE_BASE_MB + NATIVE_MB_PER_SCALE * scale
    if available_mb is None:
        return True, f"needs about {need:,.0f} MB (extrapolated); available memory unknown"
    why = (f"needs about {need:,.0f} MB ({NATIVE_BASE_MB:,.0f} + {NATIVE_MB_PER_SCALE:g} per scale unit, "
           f"measured at scales 1-1000), {available_mb:,.0f} MB may be used")
    return need <= available_mb, why


_HTTP_CAPS = {"templates": 500, "random": 500, "scans": 100, "batch_loop": 2000, "batch_many": 20_000,
              "evtc": 200}
ENGINES: dict[str, EngineSpec] = {spec.name: spec for spec in (
    EngineSpec("native", "native (ours)", "ours", "Python interpreter over a KBIndex read from the Turtle"),
    EngineSpec("oxigraph-memory", "SPARQL / Oxigraph memory (ours)", "ours",
               "compiled SPARQL on embedded pyoxigraph, in memory"),
    EngineSpec("oxigraph-disk", "SPARQL / Oxigraph disk (ours)", "ours",
               "compiled SPARQL on embedded pyoxigraph, RocksDB on disk"),
    EngineSpec("rdflib", "SPARQL / rdflib", "sparql", "compiled SPARQL on rdflib's own engine over a Graph",
               caps={"templates": 50, "random": 100, "scans": 20, "batch_loop": 300, "batch_many": 300,
                     "evtc": 50},
               max_scale=10, max_scale_reason="rdflib loads 5M triples in minutes and several GB"),
    EngineSpec("oxigraph-server", "SPARQL / Oxigraph server HTTP", "sparql",
               "compiled SPARQL on `oxigraph serve-read-only`, over HTTP (SPARQLWrapper)", caps=_HTTP_CAPS),
    EngineSpec("virtuoso", "SPARQL / Virtuoso HTTP", "sparql",
               "compiled SPARQL on Virtuoso 7, over HTTP (SPARQLWrapper)", caps=_HTTP_CAPS),
    EngineSpec("kopl", "kopl (official)", "peer", "KQA Pro's Python KoPL engine, in process",
               caps={"templates": 300, "random": 300, "scans": 50, "batch_loop": 3000},
               large_caps={"templates": 25, "random": 25, "scans": 4, "batch_loop": 100}),
    EngineSpec("kopl-engine", "kopl-engine (VisKoP)", "peer", "VisKoP's C++ KoPL engine, in a child process"),
)}
OURS = tuple(n for n, s in ENGINES.items() if s.family == "ours")
HTTP_ENGINES = ("oxigraph-server", "virtuoso")


def parse_engines(text: str | None) -> tuple[str, ...]:
    """Engine names from ``a,b,c`` (``None`` or ``all``: every engine), in table order.

    :raises ConfigError: for an unknown name (with a suggestion).
    """
    if not text or text.strip() == "all":
        return tuple(ENGINES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in ENGINES:
            raise ConfigError(unknown_name_message("engine", name, ENGINES))
    return tuple(n for n in ENGINES if n in names)


def parse_scales(text: str) -> tuple[int, ...]:
    """Scales from ``1,10,100``.

    :raises ConfigError: for anything but positive integers.
    """
    try:
        scales = tuple(sorted({int(s) for s in text.split(",") if s.strip()}))
    except ValueError:
        raise ConfigError(f"--scale takes positive integers separated by commas, got {text!r}") from None
    if not scales or scales[0] < 1:
        raise ConfigError(f"--scale takes positive integers separated by commas, got {text!r}")
    return scales


@dataclass
class BenchConfig:
    """What to run. ``n`` is programs per template shape; the other sizes follow it unless set."""

    scales: tuple[int, ...] = (1, 10)
    engines: tuple[str, ...] = tuple(ENGINES)
    n: int = 2000
    random_programs: int | None = None       # default: n
    scan_programs: int = 60                  # per scan shape
    batch: int | None = None                 # default: 120,000; HUGE_BATCH from HUGE_SCALE on
    evtc: int | None = None                  # default: n // 2; 0 (off) from HUGE_SCALE on
    evtc_train: int = 20_000
    workers: int = 2
    seed: int = 0
    kb_seed: int = 42
    out: Path = Path("reports/bench")
    virtuoso_url: str | None = None
    oxigraph_server_url: str | None = None
    worker_timeout: float = 3600.0
    rounds: int = 4                          # each work item runs in this many interleaved slices

    def sizes(self, scale: int = 1) -> dict[str, int]:
        """The work at ``scale``: what was set, else the defaults (smaller from :data:`HUGE_SCALE`)."""
        huge = scale >= HUGE_SCALE
        batch = self.batch if self.batch is not None else (HUGE_BATCH if huge else 120_000)
        evtc = self.evtc if self.evtc is not None else (0 if huge else max(self.n // 2, 1))
        return {"templates": self.n, "random": self.random_programs if self.random_programs is not None else self.n,
                "scans": self.scan_programs, "batch": batch, "evtc": evtc, "evtc_train": self.evtc_train}

    def check(self) -> None:
        """:raises ConfigError: for sizes or URLs that cannot work."""
        for name, value in self.sizes().items():
            if value < 0:
                raise ConfigError(f"{name} size must be >= 0, got {value}")
        if self.n < 1:
            raise ConfigError(f"--n must be at least 1, got {self.n}")
        if self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {self.workers}")
        if (self.virtuoso_url or self.oxigraph_server_url) and len(self.scales) != 1:
            raise ConfigError("an endpoint URL holds one KB: give --virtuoso/--oxigraph-server URL "
                              "with exactly one --scale")
        for url in (self.virtuoso_url, self.oxigraph_server_url):
            if url is not None and not url.startswith(("http://", "https://")):
                raise ConfigError(f"not an http(s) endpoint URL: {url!r}")
