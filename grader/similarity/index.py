"""The evidence: rarity weights, candidate pairs from an index, scores per exercise and overall, clusters.

A fingerprint shared by df of the N hand-ins that answer an exercise weighs log(1 + N / df): the
idiom half the class writes weighs little, a fragment two students share weighs much (and a class
that shares everything still shows its copies). A pair's score for an exercise is the weighted
Jaccard of their fingerprint sets (shared weight over the weight of the union); over the whole
hand-in, the sums over the exercises. Hand-ins identical after normalisation are grouped first;
candidate pairs come from an inverted index over fingerprints, skipping those too common to
point at anyone, so the work grows with the evidence, not with the square of the class. A pair's
shared weight is the sum over its common fingerprints and over its rare ones apart: each hand-in's
common part of an answer is one of few (what the reference, or one idiom, gives), so the shared
weight of two common parts is computed once per distinct pair of parts, not once per pair of hand-ins.
Groups of three or more linked by high scores are clusters: over the whole hand-in (overall scores),
and per exercise (that exercise's scores), so that a SmoothAbs passed round inside otherwise
independent work shows as a cluster of its own.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from grader.similarity.handins import HandIn

CLUSTER_SCORE = 0.6  # overall score that links two hand-ins into a cluster
MIN_COMMON_CAP = 64  # a fingerprint in more groups than max(this, 4 * sqrt(groups)) proposes no pairs
KEEP_OVERALL = 20000  # pairs kept for the page and the CSV (its limit), best overall
KEEP_PER_EXERCISE = 1000  # and best per exercise (the page shows 10)
PROBES = 8  # per answer, its rarest shared fingerprints that look for partners
PARTNERS = 16  # per answer, the partners its probes reach most (ties: the rarest probe's first) that are candidates
MIN_HITS = 2  # probes of one answer that must reach a partner for the pair to be a candidate


@dataclass
class GroupPair:
    a: int  # group indexes, a <= b (a == b: two members of one group)
    b: int
    overall: float
    by_exercise: dict[str, float]
    shared: float  # the shared weight over all exercises


@dataclass
class Pair:
    a: str
    b: str
    overall: float
    by_exercise: dict[str, float]
    shared: float


@dataclass
class Review:
    hand_ins: list[HandIn]
    exercises: list[str]
    weights: dict[str, dict[int, float]]
    groups: list[list[int]]  # indexes into hand_ins, identical after normalisation
    group_pairs: list[GroupPair]
    ranked: dict[str | None, list[GroupPair]] = field(default_factory=dict)  # exercise (None: overall) -> best first
    clusters: list[list[str]] = field(default_factory=list)  # over the whole hand-in
    exercise_clusters: dict[str, list[list[str]]] = field(default_factory=dict)  # exercise -> its clusters

    def pairs(self, limit: int | None = None, exercise: str | None = None) -> list[Pair]:
        """Hand-in pairs, best first, by overall score or by one exercise's; at most `limit`."""
        out: list[Pair] = []
        for gp in self.ranked.get(exercise, []):
            members = itertools.combinations(self.groups[gp.a], 2) if gp.a == gp.b else \
                itertools.product(self.groups[gp.a], self.groups[gp.b])
            for i, j in members:
                a, b = sorted((self.hand_ins[i].name, self.hand_ins[j].name))
                out.append(Pair(a, b, gp.overall, gp.by_exercise, gp.shared))
                if limit is not None and len(out) >= limit:
                    return out
        return out

    def fingerprint_weight(self, exercise: str, fp: int) -> float:
        return self.weights.get(exercise, {}).get(fp, 0.0)


def review(hand_ins: list[HandIn], exercises: list[str]) -> Review:
    weights = rarity_weights(hand_ins, exercises)
    groups = identical_groups(hand_ins)
    reps = [hand_ins[g[0]] for g in groups]
    totals = [{e: sum(map(weights[e].__getitem__, fps)) for e, fps in r.exercises.items()} for r in reps]
    kept = Kept(exercises, len(groups))
    for g in range(len(groups)):
        if len(groups[g]) > 1 and reps[g].exercises:
            kept.add(GroupPair(g, g, 1.0, {e: 1.0 for e in reps[g].exercises}, sum(totals[g].values())))
    found, common = candidate_pairs(reps)
    scorer = Scorer(reps, totals, weights, common)
    for a, b in found:
        kept.add(scorer.score(a, b))
    del found, scorer
    result = Review(hand_ins, exercises, weights, groups, kept.pairs(), kept.ranked())
    result.clusters = kept.clusters(result)
    result.exercise_clusters = {e: found for e in exercises if (found := kept.clusters(result, e))}
    return result


class Kept:
    """What the page and the CSV show, bounded whatever the number of scored pairs: the KEEP_OVERALL
    best pairs overall and the KEEP_PER_EXERCISE best of each exercise (heaps), and the links of
    CLUSTER_SCORE or more folded into one union-find overall and one per exercise as they come."""

    def __init__(self, exercises: list[str], groups: int):
        self.overall: list = []
        self.by_exercise: dict[str, list] = {e: [] for e in exercises}
        self.links: dict[str | None, list[int]] = {e: list(range(groups)) for e in [None, *exercises]}
        self.count = 0

    def add(self, gp: GroupPair) -> None:
        self.count += 1
        _push(self.overall, (gp.overall, gp.shared, self.count, gp), KEEP_OVERALL)
        if gp.overall >= CLUSTER_SCORE:
            _join(self.links[None], gp.a, gp.b)
        for e, score in gp.by_exercise.items():
            heap = self.by_exercise[e]
            if score > 0 and (len(heap) < KEEP_PER_EXERCISE or score >= heap[0][0]):  # else _push would not
                _push(heap, (score, gp.overall, self.count, gp), KEEP_PER_EXERCISE)
            if score >= CLUSTER_SCORE:
                _join(self.links[e], gp.a, gp.b)

    def pairs(self) -> list[GroupPair]:
        out = {id(item[3]): item[3] for heap in [self.overall, *self.by_exercise.values()] for item in heap}
        return list(out.values())

    def ranked(self) -> dict[str | None, list[GroupPair]]:
        """Each heap's pairs best first: overall (key None) and per exercise."""
        heaps = {None: self.overall, **self.by_exercise}
        best_first = (lambda item: (item[0], item[1], -item[2]))  # ties: the first scored first
        return {e: [item[3] for item in sorted(heap, key=best_first, reverse=True)] for e, heap in heaps.items()}

    def clusters(self, result: Review, exercise: str | None = None) -> list[list[str]]:
        """Hand-ins linked (directly or through others) by a score of CLUSTER_SCORE or more, 3+: the
        overall score, or with `exercise` that exercise's score (among the hand-ins that answer it)."""
        parent = self.links[exercise]
        members: dict[int, list[str]] = defaultdict(list)
        for g, group in enumerate(result.groups):
            answers = result.hand_ins[group[0]].exercises
            if answers if exercise is None else exercise in answers:
                members[_root(parent, g)] += [result.hand_ins[i].name for i in group]
        return sorted((sorted(m) for m in members.values() if len(m) >= 3), key=len, reverse=True)


def _push(heap: list, item: tuple, limit: int) -> None:
    if len(heap) < limit:
        heapq.heappush(heap, item)
    elif item[:2] > heap[0][:2]:
        heapq.heapreplace(heap, item)


def _root(parent: list[int], g: int) -> int:
    while parent[g] != g:
        parent[g] = parent[parent[g]]
        g = parent[g]
    return g


def _join(parent: list[int], a: int, b: int) -> None:
    parent[_root(parent, a)] = _root(parent, b)


def rarity_weights(hand_ins: list[HandIn], exercises: list[str]) -> dict[str, dict[int, float]]:
    weights: dict[str, dict[int, float]] = {}
    for e in exercises:
        df: dict[int, int] = defaultdict(int)
        answered = 0
        for h in hand_ins:
            fps = h.exercises.get(e)
            if fps:
                answered += 1
                for fp in fps:
                    df[fp] += 1
        weights[e] = {fp: math.log(1 + answered / n) for fp, n in df.items()}
    return weights


def identical_groups(hand_ins: list[HandIn]) -> list[list[int]]:
    by_key: dict[frozenset, list[int]] = {}
    for i, h in enumerate(hand_ins):
        by_key.setdefault(frozenset(h.exercises.items()), []).append(i)
    return list(by_key.values())


def candidate_pairs(reps: list[HandIn]) -> tuple[list[tuple[int, int]], dict[str, set[int]]]:
    """(pairs of groups worth scoring, in order; exercise -> its fingerprints too common to be evidence).

    Every fingerprint of every answer is indexed; each answer then probes the index with its PROBES
    rarest fingerprints that someone else shares (and that are not too common): of the partners that
    half those probes reach (MIN_HITS at least), the PARTNERS reached most are candidates. A copy
    shares the rarest of what it copied, so it is found; one statement that many write (`torch.sin(x)`)
    reaches many partners, each with its few fingerprints, and proposes none of them alone; and an
    answer proposes a bounded number of partners, so the pairs grow with the class, not its square.
    Equal answers (one object, `handins.read_all`) probe once for all the groups that gave them."""
    index: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    givers: dict[str, dict[int, tuple[frozenset[int], list[int]]]] = defaultdict(dict)  # e -> id -> (answer, groups)
    for g, r in enumerate(reps):
        for e, fps in r.exercises.items():
            postings = index[e]
            for fp in fps:
                postings[fp].append(g)
            givers[e].setdefault(id(fps), (fps, []))[1].append(g)
    cap = max(MIN_COMMON_CAP, int(4 * math.sqrt(len(reps))))
    common = {e: {fp for fp, members in postings.items() if len(members) > cap} for e, postings in index.items()}
    found: set[tuple[int, int]] = set()
    for e, answers in givers.items():
        postings = index[e]
        for fps, gs in answers.values():
            shared = [(n, fp) for fp in fps if 1 < (n := len(postings[fp])) <= cap]
            probes = heapq.nsmallest(PROBES, shared)
            need = max(MIN_HITS, len(probes) // 2)
            hits = Counter(itertools.chain.from_iterable(postings[fp] for _, fp in probes))
            ranked = hits.most_common(PARTNERS + 1)  # with g popped, most_common(PARTNERS) would be these less g
            for g in gs:
                partners = [(h, n) for h, n in ranked if h != g][:PARTNERS]
                found.update((min(g, h), max(g, h)) for h, n in partners if n >= need)
    return sorted(found), common


class Scorer:
    """Scores of group pairs: per exercise, the weighted Jaccard of the two answers' fingerprints. The
    same answer in both (one object) shares all its weight; the shared weight of two common parts is
    computed once per distinct pair of them."""

    def __init__(self, reps: list[HandIn], totals: list[dict[str, float]], weights: dict[str, dict[int, float]],
                 common: dict[str, set[int]]):
        self.weights = weights
        interned: dict[tuple[str, frozenset], int] = {}
        self.parts: list[dict[str, tuple[frozenset, int, frozenset, float]]] = []  # e -> (answer, common, rare, total)
        for r, total in zip(reps, totals):
            split = {}
            for e, fps in r.exercises.items():
                usual = fps & common.get(e, frozenset())
                split[e] = (fps, interned.setdefault((e, usual), len(interned)), fps - usual, total[e])
            self.parts.append(split)
        self.common_parts = {i: usual for (_, usual), i in interned.items()}
        self.common_shared: dict[tuple[int, int], float] = {}  # (index, index) of two common parts
        self.grand_totals = [sum(t.values()) for t in totals]

    def score(self, a: int, b: int) -> GroupPair:
        by_exercise: dict[str, float] = {}
        shared_all = 0.0
        parts_b = self.parts[b]
        for e, (answer, ia, rare_a, total_a) in self.parts[a].items():
            other = parts_b.get(e)
            if other is None:
                continue
            answer_b, ib, rare_b, total_b = other
            if answer is answer_b:
                shared = total_a
            else:
                key = (ia, ib) if ia <= ib else (ib, ia)
                shared = self.common_shared.get(key)
                w = self.weights[e]
                if shared is None:
                    shared = self.common_shared[key] = sum(map(w.__getitem__, self.common_parts[ia] & self.common_parts[ib]))
                if rare_a and rare_b:
                    shared += sum(map(w.__getitem__, rare_a & rare_b))
            union = total_a + total_b - shared
            if shared > 0 and union > 0:
                by_exercise[e] = shared / union
            shared_all += shared
        union_all = self.grand_totals[a] + self.grand_totals[b] - shared_all
        return GroupPair(a, b, shared_all / union_all if union_all > 0 else 0.0, by_exercise, shared_all)
