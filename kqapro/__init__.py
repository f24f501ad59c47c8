"""Full KoPL (KQA Pro's 27 functions) on KQA Pro-format knowledge bases: values, KB model,
RDF import/export, programs, type checker, native interpreter, SPARQL compiler."""
