"""Shared fixtures: one cache directory per test session, the scale-1 KB and its store."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def synkqa_home(tmp_path_factory):
    """Every test session builds its artefacts from scratch in a private directory."""
    home = tmp_path_factory.mktemp("synkqa-home")
    old = os.environ.get("SYNKQA_HOME")
    os.environ["SYNKQA_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("SYNKQA_HOME", None)
    else:
        os.environ["SYNKQA_HOME"] = old


@pytest.fixture(scope="session")
def kb_turtle(synkqa_home):
    from synkqa.benchmark.world import ensure_turtle
    return ensure_turtle(42, 1)


@pytest.fixture(scope="session")
def kb_schema(kb_turtle):
    """The SynKQA-Pro KB's schema (vocabulary and entities), seed 42, scale 1."""
    from synkqa.benchmark.world import kb_schema
    return kb_schema(42, 1)


@pytest.fixture(scope="session")
def kb_store(kb_turtle):
    from synkqa.benchmark.world import open_store
    return open_store(42, 1)


# Real SPARQL servers (Oxigraph server, Virtuoso) and a scriptable broken endpoint, for
# the endpoint tests (tests/endpoint_servers.py starts and stops them by PID).
from tests.endpoint_servers import fake_endpoint, oxigraph_server, virtuoso_server  # noqa: E402,F401
from tests.web_server import served  # noqa: E402,F401
