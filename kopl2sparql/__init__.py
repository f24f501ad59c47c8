"""The KoPL language: program model, syntax, type checker, native interpreter, SPARQL compiler."""

from kopl2sparql.answer import Answer, format_number
from kopl2sparql.errors import (ExecutionError, ProgramError, ProgramSyntaxError, ProgramTypeError,
                                SynKQAError)
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program, Step

__all__ = ["Answer", "format_number", "Program", "Step", "OPERATORS", "SynKQAError", "ProgramError",
           "ProgramSyntaxError", "ProgramTypeError", "ExecutionError"]

from kopl2sparql.syntax import parse  # noqa: E402
__all__ += ["parse"]
from kopl2sparql.typecheck import CheckedProgram, check  # noqa: E402
from kopl2sparql.kqapro import from_kqapro, to_kqapro  # noqa: E402
__all__ += ["check", "CheckedProgram", "to_kqapro", "from_kqapro"]
