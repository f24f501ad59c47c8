"""RDF I/O and query backends: Turtle, Oxigraph, remote endpoints; the Executor protocol."""
