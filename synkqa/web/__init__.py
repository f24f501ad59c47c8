"""``synkqa serve``: the program workbench and a read-only SPARQL 1.1 Protocol service.

:mod:`~synkqa.web.workbench` is the service without HTTP (programs, completion, questions,
SPARQL, all under time limits in worker processes); :mod:`~synkqa.web.app` puts it behind
Starlette routes and serves the pages in ``static/``.
"""
