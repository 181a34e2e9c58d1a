"""The course's hidden tests and their oracle: never shipped to students, never visible to workers.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
