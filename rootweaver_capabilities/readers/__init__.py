"""Readers that answer from the synth context: the OpenAI-compatible client, the embedded
llama.cpp reader and the GGUF models shipped in PyPI packages, prompts and reply parsing.
"""
