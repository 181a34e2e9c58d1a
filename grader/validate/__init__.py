"""`grader validate`: the instructor's audit of a course before releasing it or after changing a test.

`audit` grades the reference (several seeds, every device present), the stubs, every learner mistake
of a folder (`mistakes`) and lazy answers derived from the reference (`lazy`) with the engine, in
parallel, checks that the course file, the collected tests, the stubs and the solutions agree and
that the student bundle holds no hidden test or solution, and prints a table per exercise; `cli`
adds the command. Instructor code: it may import the host, the cases, the course (`grader.catalog`) and the exports,
and never ships to students.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""
