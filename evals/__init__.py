"""Evaluations of rootweaver's algorithms on real multi-hop QA data (the edge: files, models)."""
