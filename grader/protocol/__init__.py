"""The protocol both sides of the trust boundary speak: data shapes only, no behaviour of either side.

`wire` is the data-only message format (JSON plus raw tensor bytes; nothing is ever pickled)
and its decoder; `limits` holds what a worker may use and how it is isolated. Imported by the
sandboxed side and by the host; imports nothing of the grader but itself.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
