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
    batch: int = 120_000
    evtc: int | None = None                  # default: n // 2
    evtc_train: int = 20_000
    workers: int = 2
    seed: int = 0
    kb_seed: int = 42
    out: Path = Path("reports/bench")
    virtuoso_url: str | None = None
    oxigraph_server_url: str | None = None
    worker_timeout: float = 3600.0
    rounds: int = 4                          # each work item runs in this many interleaved slices

    def sizes(self) -> dict[str, int]:
        return {"templates": self.n, "random": self.random_programs if self.random_programs is not None else self.n,
                "scans": self.scan_programs, "batch": self.batch,
                "evtc": self.evtc if self.evtc is not None else max(self.n // 2, 1),
                "evtc_train": self.evtc_train}

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
