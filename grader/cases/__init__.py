"""The test cases: `kit` (checks and known mistakes), `public/` and `hidden/` tests, `points.yaml`.

They run in the host's pytest session, in the trusted process, and reach student code only
through the `submission` fixture. They may import the host's argument markers, the protocol
and the worker-side helpers; nothing but `hidden/` itself imports `hidden/` (the hidden tests
and the oracle are never shipped to students nor visible to workers).
"""
