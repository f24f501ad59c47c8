"""Parsers: baselines, template classifier, slot filling, execution-validated reranking."""
