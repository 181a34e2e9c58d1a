"""Fingerprints of normalised units: small enough that a three-line answer has several.

Each unit (one normalised statement) gives the hash of its whole text and the hashes of its token
k-grams (K tokens, far fewer than the 23-25 of general-purpose tools: a statement is short), so a
statement that differs in one place still shares most of its fingerprints. Hashes are the same in
every process and every run (a text's is from blake2b; a k-gram's is Python's hash of a tuple of
its tokens' ints, which no hash seed changes), so hand-ins read in parallel processes compare with
each other, and the same class gives the same review.
"""

from __future__ import annotations

import hashlib
import re

from grader.similarity.normalize import Unit

K = 5
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+|\*\*|//|==|!=|<=|>=|->|\S")
_TOKEN_IDS: dict[str, int] = {}  # a normal form has few distinct tokens (V, C, the API, operators)
MAX_TOKEN_IDS = 100_000  # but a hostile one may have many: beyond this, not remembered


def tokens(text: str) -> list[str]:
    """The tokens of a normalised statement (already canonical: a regular expression suffices)."""
    return _TOKEN.findall(text)


def stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def _token_id(word: str) -> int:
    found = _TOKEN_IDS.get(word)
    if found is None:
        found = stable_hash(word)
        if len(_TOKEN_IDS) < MAX_TOKEN_IDS:
            _TOKEN_IDS[word] = found
    return found


def unit_fingerprints(unit: Unit) -> set[int]:
    ids = [_token_id(w) for w in tokens(unit.text)]
    found = {stable_hash("unit\0" + unit.text)}
    found.update(hash(tuple(ids[i:i + K])) for i in range(max(0, len(ids) - K + 1)))
    return found


def fingerprints(units: list[Unit]) -> frozenset[int]:
    found: set[int] = set()
    for unit in units:
        found |= unit_fingerprints(unit)
    return frozenset(found)
