"""Adapters to other frameworks, converting at the edge (LangChain).
"""
