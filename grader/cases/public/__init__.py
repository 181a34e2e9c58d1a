"""The course's public tests (shipped to students) and its worker-side helpers.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
