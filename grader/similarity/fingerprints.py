"""Fingerprints of normalised units: small enough that a three-line answer has several.

Each unit (one normalised statement) gives the hash of its whole text and the hashes of its token
k-grams (K tokens, far fewer than the 23-25 of general-purpose tools: a statement is short), so a
statement that differs in one place still shares most of its fingerprints. Hashes are Python's
string hash: stable within one run, which is all a review compares.
"""

from __future__ import annotations

import re

from grader.similarity.normalize import Unit

K = 5
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+|\*\*|//|==|!=|<=|>=|->|\S")


def tokens(text: str) -> list[str]:
    """The tokens of a normalised statement (already canonical: a regular expression suffices)."""
    return _TOKEN.findall(text)


def unit_fingerprints(unit: Unit) -> set[int]:
    words = tokens(unit.text)
    found = {hash(("unit", unit.text))}
    found.update(hash(tuple(words[i:i + K])) for i in range(max(0, len(words) - K + 1)))
    return found


def fingerprints(units: list[Unit]) -> frozenset[int]:
    found: set[int] = set()
    for unit in units:
        found |= unit_fingerprints(unit)
    return frozenset(found)

