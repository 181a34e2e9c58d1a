"""The code that runs with student code: the zygote's children and the worker.

Everything here runs in the zygote (`zygote`: forking, entering the sandbox), in the sandbox
it builds (`isolation`: namespaces, a private root, limits, dropped privileges) and in the
worker that imports the student's modules (`worker`: one request in, one reply of plain data
out; `seal`: tamper evidence for that reply path; `helpers`: the functions, graphs and probes
tests hand to student code). Nothing here decides a score: the host checks every reply.

It may import `grader.protocol` and nothing else of the grader: not the host, not the cases
(they hold the hidden tests), not the CLI or the exports (import-linter contracts in
pyproject.toml). Once student code has run, everything here is untrusted.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
