"""The trusted side: the code that decides scores, and never runs student code.

`runner` grades submissions (one pytest session each; many in a process pool or on Dask via
`distributed`); `intake` reads hand-ins as untrusted files; `launcher` starts the zygote and
holds the handles of its workers; `student_code` is what tests call student code through (a
request over the socket, a reply of plain data checked here); `plugin` is the pytest plugin
that maps tests to the course file and outcomes to points; `scoring` applies the rules that look at
a submission's tests together (no points without work); `results` writes the score files.

It may import `grader.protocol`, `grader.catalog`, `grader.errors`, `grader.safetext` and, to
start workers and share the helpers' definitions, `grader.sandboxed`; never the exports, the
report, the policy, the LMS or the CLI, and never a student's module: those are imported in the
worker only.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
