"""KoPL's operators, each defined once (signature, typing rule, native semantics, SPARQL
lowering: see :mod:`kopl2sparql.operators.base`), and the table the language reads them from.

The table is written out here, in one place: no operator registers itself on import.
"""

from __future__ import annotations

from kopl2sparql.operators.base import Operator
from kopl2sparql.operators.query import Count, QueryAttr, QueryName
from kopl2sparql.operators.select import Argmax, Argmin, FilterNum
from kopl2sparql.operators.sets import And, Diff, Find, Or, Relate, RelateInv
from kopl2sparql.operators.verify import Compare, VerifyNum, VerifyRel

OPERATORS: dict[str, Operator] = {op.name: op for op in (
    Find(), Relate(), RelateInv(), QueryName(), QueryAttr(), Count(), Compare(), Argmax(), Argmin(),
    And(), Or(), Diff(), VerifyRel(), FilterNum(), VerifyNum(),
)}
"""Every operator by name (the order is the one ``synkqa`` lists them in)."""

__all__ = ["OPERATORS", "Operator"]
