"""The synth context under a hard budget: budgets and their tokenizer, the line compactor, the
strategy registry, the submodular and evidence packers (``packing/``, ``evidence/``) and the
one rendering of the synth context to text. Never changes the trajectory; never sees the loop.

May import: conventions, defaults, memo, records, registry, retrieval, text.
"""
