"""The error hierarchy, re-exported: it lives at the bottom layer (:mod:`ontology.errors`)
so the schema reader can raise it too."""

from ontology.errors import *  # noqa: F401,F403
from ontology.errors import __all__  # noqa: F401
