"""The SynKQA-Pro benchmark: the KB generator, the KB and its stores built on first use,
the templates, the questions with gold programs and answers, the peer KoPL engines, and
executors for a KB by name (the layer above ``store/``)."""
