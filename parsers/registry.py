"""The systems the toolkit can train, run and evaluate, by name.

A :class:`SystemSpec` says how to build a system's estimator, whether it must be trained,
which trained model it shares (EV-TC reuses TC's), and what it needs at prediction time
(an option set, gold programs). ``best`` names the strongest system that can serve a
request. New systems are one :func:`register_system` call away; nothing else here changes.

Trained models are cached under ``paths.models_dir()`` with deterministic names (pickle files): the model
key, the seed and a fingerprint of the training data, so a changed dataset never reuses a
stale model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pickle

from kopl2sparql.errors import ConfigError, ModelError, unknown_name_message
from parsers.baselines import MajorityTemplate, Oracle, PrototypeRetrieval, RandomChoice
from parsers.rerank import ExecutionValidatedParser
from parsers.template import TemplateClassifier
from synkqa.benchmark import paths

BEST = "best"


@dataclass(frozen=True)
class SystemSpec:
    """How to make and run one system.

    ``make(seed)`` returns the unfitted estimator that is trained and cached under
    ``model_key``; ``wrap(model, **options)`` turns the fitted model into the object whose
    ``answer(queries, executor)`` is called (identity by default). ``trainable``: the fitted
    model is worth caching; ``uses_train_data``: fitting reads the train split at all.
    ``strength`` orders systems for ``best`` (higher is stronger; systems needing gold
    programs never qualify).
    """

    name: str
    title: str
    description: str
    make: Callable[[int], Any]
    predicts_program: bool
    needs_choices: bool
    model_key: str | None = None
    wrap: Callable[..., Any] | None = None
    needs_gold: bool = False
    trainable: bool = True
    uses_train_data: bool = True
    strength: int = 0
    default_k: int | None = None
    options: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        return self.model_key or self.name


SYSTEMS: dict[str, SystemSpec] = {}


def register_system(spec: SystemSpec, replace: bool = False) -> SystemSpec:
    """Add a system (``replace=True`` to redefine one)."""
    if spec.name == BEST:
        raise ConfigError(f"'{BEST}' is reserved")
    if spec.name in SYSTEMS and not replace:
        raise ConfigError(f"system '{spec.name}' is already registered")
    SYSTEMS[spec.name] = spec
    return spec


def system_names() -> list[str]:
    """Registered names, in registration order (the paper's Table IV order first)."""
    return list(SYSTEMS)


def best_system(with_choices: bool = True) -> SystemSpec:
    """The strongest registered system usable with (or without) an option set."""
    usable = [s for s in SYSTEMS.values()
              if not s.needs_gold and (with_choices or not s.needs_choices)]
    if not usable:
        raise ConfigError("no registered system can answer " + ("" if with_choices else "without options"))
    return max(usable, key=lambda s: s.strength)


def get_spec(name: str, with_choices: bool = True) -> SystemSpec:
    """The spec called ``name``; ``best`` resolves to :func:`best_system`.

    :raises ConfigError: for an unknown name, with a did-you-mean.
    """
    if name == BEST:
        return best_system(with_choices)
    if name not in SYSTEMS:
        raise ConfigError(unknown_name_message("system", name, [*SYSTEMS, BEST]))
    return SYSTEMS[name]


def fingerprint(questions: Sequence[str], template_ids: Sequence[int]) -> str:
    """Short stable hash of a training set (names the cached model)."""
    digest = hashlib.sha256()
    for q, t in zip(questions, template_ids):
        digest.update(f"{int(t)}\t{q}\n".encode())
    return digest.hexdigest()[:12]


def model_path(spec: SystemSpec, seed: int, data_fingerprint: str) -> Path:
    """Where the trained model of ``spec`` for ``seed`` and this training set is cached."""
    return paths.models_dir() / f"{spec.key}-seed{seed}-{data_fingerprint}.pkl"


def train(spec: SystemSpec, seed: int, questions: Sequence[str], template_ids: Sequence[int],
          cache: bool = True) -> tuple[Any, Path | None, bool]:
    """Fit (or load the cached) model of ``spec``: returns ``(model, path, loaded_from_cache)``.

    Systems that learn nothing are fitted in place and not cached.
    """
    model = spec.make(seed)
    if not spec.trainable:
        return model.fit(questions, template_ids), None, False
    path = model_path(spec, seed, fingerprint(questions, template_ids))
    if cache and path.exists():
        try:
            return _load(path), path, True
        except Exception:  # noqa: BLE001 - a corrupt or incompatible pickle is rebuilt
            path.unlink(missing_ok=True)
    model.fit(questions, template_ids)
    if cache:
        with paths.atomic_path(path) as tmp:
            with open(tmp, "wb") as handle:
                pickle.dump(model, handle, protocol=pickle.HIGHEST_PROTOCOL)
    return model, path, False


def load(spec: SystemSpec, seed: int, data_fingerprint: str) -> Any:
    """The cached trained model.

    :raises ModelError: if it has not been trained yet (with the command that trains it).
    """
    path = model_path(spec, seed, data_fingerprint)
    if not path.exists():
        raise ModelError(f"no trained model for '{spec.name}' (seed {seed}) at {path}; "
                         f"run: synkqa train --system {spec.name} --seed {seed}")
    return _load(path)


def _load(path: Path) -> Any:
    # Plain pickle: joblib's unpickler is pure Python and ten times slower on the
    # vectorizer's vocabulary dict, and these models hold no large arrays.
    with open(path, "rb") as handle:
        return pickle.load(handle)


def build(spec: SystemSpec, model: Any, **options: Any) -> Any:
    """The answering object of ``spec`` around a fitted ``model``."""
    if spec.wrap is None:
        return model
    return spec.wrap(model, **{k: v for k, v in options.items() if k in spec.options and v is not None})


register_system(SystemSpec(
    "random", "RandomChoice", "Random option among the 10 candidates",
    make=lambda seed: RandomChoice(random_state=seed), predicts_program=False, needs_choices=True,
    trainable=False, uses_train_data=False, strength=0))
register_system(SystemSpec(
    "majority", "MajorityTemplate", "Always predict the most frequent training template",
    make=lambda seed: MajorityTemplate(), predicts_program=True, needs_choices=False,
    trainable=False, strength=10))
register_system(SystemSpec(
    "prototype", "PrototypeRetrieval", "TF-IDF prototype (centroid) retrieval on type-normalised questions",
    make=lambda seed: PrototypeRetrieval(), predicts_program=True, needs_choices=False, strength=20))
register_system(SystemSpec(
    "tc", "TemplateClassifier (TC)", "TF-IDF (1-2 grams) + SGD logistic regression; top-1 template",
    make=lambda seed: TemplateClassifier(random_state=seed), predicts_program=True,
    needs_choices=False, strength=30, default_k=1))
register_system(SystemSpec(
    "ev-tc", "Execution-Validated TC (EV-TC)",
    "Execute top-k templates in rank order; select the first output in the option set",
    make=lambda seed: TemplateClassifier(random_state=seed), model_key="tc",
    wrap=lambda model, **kw: ExecutionValidatedParser.from_fitted(model, **kw),
    predicts_program=True, needs_choices=True, strength=40, default_k=5,
    options=("k", "validator", "selection")))
register_system(SystemSpec(
    "oracle", "Oracle (Gold Program)", "Execute the gold program",
    make=lambda seed: Oracle(), predicts_program=True, needs_choices=False, needs_gold=True,
    trainable=False, uses_train_data=False, strength=100))

# Beyond the paper: schema-ev (importing its module also adds the open-ended validators to
# parsers.validators' registries). Registered here, like the others, so that no module
# registers itself on import.
from parsers.compose_ev import MODEL_KEY as COMPOSE_MODEL_KEY, CompositionalParser  # noqa: E402
from parsers.open_ended import MODEL_KEY, SYSTEM_NAME, SchemaValidatedParser  # noqa: E402

register_system(SystemSpec(
    SYSTEM_NAME, "Schema-aware EV (compositional: link, enumerate, rank, validate, refine)",
    "Link entities from the KB's labels, enumerate typed programs with filters, verifications, "
    "set operators, compared counts, superlatives and chains of up to four hops, rank them with "
    "a schema-aware model, execute in rank order with answer-type and trace checks (and options "
    "when given), and edit failed candidates where they failed; runs open-ended on any KB",
    make=lambda seed: CompositionalParser(random_state=seed), model_key=COMPOSE_MODEL_KEY,
    wrap=lambda model, **kw: model.with_options(**kw),
    predicts_program=True, needs_choices=False, strength=50, default_k=10,
    options=("k", "validator", "selection")))
register_system(SystemSpec(
    "schema-ev-templates", "Schema-aware EV, template-era grammar",
    "schema-ev before the compositional program space: the enumerator of parsers.enumerate "
    "(chains, one attribute or superlative, pairs), regular-expression entity linking; kept as "
    "the baseline of the compositional study",
    make=lambda seed: SchemaValidatedParser(random_state=seed), model_key=MODEL_KEY,
    wrap=lambda model, **kw: model.with_options(**kw),
    predicts_program=True, needs_choices=False, strength=45, default_k=10,
    options=("k", "validator", "selection")))
