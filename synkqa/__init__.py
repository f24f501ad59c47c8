"""SynKQA-Pro: KoPL programs on a real triple store.

``synkqa.api`` is the library's small public API (read, compile, execute, trace, evaluate);
``synkqa.cli`` the ``synkqa`` command built on it; ``synkqa.benchmark`` the SynKQA-Pro
benchmark (KB generator, templates, dataset) that the layers below it do not know.
"""

__version__ = "0.1.0"
