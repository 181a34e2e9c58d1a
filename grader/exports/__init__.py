"""What leaves the grader as files for other tools: bundles, hand-ins and autograders.

`bundle` builds the students' zip (stubs, public tests, the grader; never a hidden test or a
solution) and `submit` the hand-in zip; `gradescope` and `otter` build instructor autograders
that carry the package with its hidden tests and grade with the host's engine inside them.
Each module adds its commands to the CLI through `register(commands, exports)`. May import the
host, the course (`grader.catalog`) and `grader.errors`; never imported by the host or the sandboxed side.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
