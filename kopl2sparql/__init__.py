"""The KoPL language: program model, syntax, type checker, native interpreter, SPARQL compiler."""

from kopl2sparql.answer import Answer, format_number
from kopl2sparql.errors import (ExecutionError, ProgramError, ProgramSyntaxError, ProgramTypeError,
                                SynKQAError)
from kopl2sparql.program import OPERATORS, Program, Step

__all__ = ["Answer", "format_number", "Program", "Step", "OPERATORS", "SynKQAError", "ProgramError",
           "ProgramSyntaxError", "ProgramTypeError", "ExecutionError"]
