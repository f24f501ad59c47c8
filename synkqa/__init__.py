"""SynKQA-Pro: the benchmark (KB generator, templates, questions) and the ``synkqa`` CLI."""

__version__ = "0.1.0"
