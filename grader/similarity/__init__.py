"""`grader similarity`: which hand-ins share code beyond the stub, as evidence for an instructor to review.

normalize (source -> units per exercise) < fingerprints (units -> hashes) < handins (reading, stub
subtracted) < index (weights, pairs, clusters) < page (HTML and CSV) < cli. How it sits beside the
grading engine: docs/engine.md; the review itself: docs/similarity.md.
"""
