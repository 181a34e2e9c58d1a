"""The package's own course (`course.yaml`, `public/` and `hidden/` tests), and the kit every course's tests use.

Tests run in the host's pytest session, in the trusted process, and reach student code only
through the `student` fixture. They may import `kit` (the host's argument markers and the
checks), the protocol and the course's worker-side helpers (`public/helpers.py`, which imports
nothing of the grader: workers load it by path); nothing but `hidden/` itself imports `hidden/`
(the hidden tests and the oracle are never shipped to students nor visible to workers). Another
course lays out the same (docs/authoring.md) and is chosen with `--course PATH`.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
