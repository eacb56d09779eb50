"""Readers that answer from the synth context: the OpenAI-compatible client, the embedded
llama.cpp reader on its runtimes (prebuilt xllamacpp or compiled llama-cpp-python) and the
GGUF models shipped in PyPI packages, prompts and reply parsing.
"""
