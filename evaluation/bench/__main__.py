"""``python -m evaluation.bench worker JOB``: the worker process that
:class:`evaluation.bench.worker._Worker` starts, one per engine and scale (see
:func:`evaluation.bench.worker.serve`). Without those arguments it prints its usage.
"""

from __future__ import annotations

from evaluation.bench.worker import main

if __name__ == "__main__":
    raise SystemExit(main())
