"""The evidence: rarity weights, candidate pairs from an index, scores per exercise and overall, clusters.

A fingerprint shared by df of the N hand-ins that answer an exercise weighs log(1 + N / df): the
idiom half the class writes weighs little, a fragment two students share weighs much (and a class
that shares everything still shows its copies). A pair's score for an exercise is the weighted
Jaccard of their fingerprint sets (shared weight over the weight of the union); over the whole
hand-in, the sums over the exercises. Hand-ins identical after normalisation are grouped first;
candidate pairs come from an inverted index over fingerprints, skipping those too common to
point at anyone, so the work grows with the evidence, not with the square of the class.
Groups of three or more linked by high scores are clusters: over the whole hand-in (overall scores),
and per exercise (that exercise's scores), so that a SmoothAbs passed round inside otherwise
independent work shows as a cluster of its own.

What the review holds grows with the class's distinct answers and nothing else (`Answers`): per
exercise, its distinct fingerprints in one sorted array and their weights, each distinct answer as
4-byte numbers of those fingerprints in one flat array; the inverted index of an exercise is made
when its candidates are sought and dropped after. Weights are summed in fixed point (integers, units
of 1 / SCALE), so a sum is exact whatever its order: equal answers share all their weight, and the
same class gives the same scores however it was read.
"""

from __future__ import annotations

import heapq
import itertools
import math
from array import array
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from grader.similarity.handins import HandIn

CLUSTER_SCORE = 0.6  # overall score that links two hand-ins into a cluster
MIN_COMMON_CAP = 64  # a fingerprint in more groups than max(this, 4 * sqrt(groups)) proposes no pairs
KEEP_OVERALL = 20000  # pairs kept for the page and the CSV (its limit), best overall
KEEP_PER_EXERCISE = 1000  # and best per exercise (the page shows 10)
PROBES = 8  # per answer, its rarest shared fingerprints that look for partners
PARTNERS = 16  # per answer, the partners its probes reach most (ties: the rarest probe's first) that are candidates
MIN_HITS = 2  # probes of one answer that must reach a partner for the pair to be a candidate
SCALE = 2 ** 30  # fixed point of the summed weights: a weight (at most log(1 + N)) to about 1e-9


class GroupPair:
    """Two groups' evidence: a <= b, group indexes (a == b: two members of one group); the overall score;
    the shared weight over all exercises; each exercise's score, one array over the review's exercises
    (NaN: no score), made a dict (`by_exercise`) only when asked: the tens of thousands a review keeps
    hold no dict and no float object each."""
    __slots__ = ("a", "b", "overall", "shared", "scores", "exercises")

    def __init__(self, a: int, b: int, overall: float, scores: array, shared: float, exercises: tuple[str, ...]):
        self.a, self.b, self.overall, self.shared, self.scores, self.exercises = a, b, overall, shared, scores, exercises

    @property
    def by_exercise(self) -> dict[str, float]:
        return {e: s for e, s in zip(self.exercises, self.scores) if s == s}

    def __repr__(self) -> str:
        return f"GroupPair({self.a}, {self.b}, {self.overall}, {self.by_exercise}, {self.shared})"


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
    weights: dict[str, tuple[np.ndarray, np.ndarray]]  # exercise -> (its fingerprints, sorted; their weights)
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
        if exercise not in self.weights:
            return 0.0
        fps, weights = self.weights[exercise]
        i = int(np.searchsorted(fps, fp))
        return float(weights[i]) if i < len(fps) and fps[i] == fp else 0.0


def review(hand_ins: list[HandIn], exercises: list[str]) -> Review:
    groups = identical_groups(hand_ins)
    answers = Answers(hand_ins, groups, exercises)
    kept = Kept(exercises, len(groups))
    for g in range(len(groups)):
        given = hand_ins[groups[g][0]].exercises
        if len(groups[g]) > 1 and given:
            scores = array("d", [1.0 if e in given else math.nan for e in answers.exercises])
            kept.add(GroupPair(g, g, 1.0, scores, answers.grand_totals[g] / SCALE, answers.exercises))
    for gp in answers.scores(candidate_pairs(answers)):
        kept.add(gp)
    weights = {e: (answers.fps[i], answers.weights[i]) for i, e in enumerate(exercises)}
    del answers
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
        for e, score in zip(gp.exercises, gp.scores):
            if score != score:  # NaN: no score
                continue
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


class Answers:
    """The class's distinct answers, per exercise i (of `exercises`), packed: `fps[i]`, its distinct
    fingerprints, sorted (int64); `weights[i]`, theirs (float) and `fixed[i]` in units of 1 / SCALE
    (int64); `ids[i]`, every distinct answer's fingerprints as their places in `fps[i]` (int32, sorted,
    one answer after the other from `start[i][k]` to `start[i][k + 1]`); `answer[i][g]`, the answer
    group g gave (-1: none). `totals[i][k]`: answer k's whole weight; `grand_totals[g]`: a group's."""

    def __init__(self, hand_ins: list[HandIn], groups: list[list[int]], exercises: list[str]):
        self.exercises, self.groups = tuple(exercises), len(groups)
        self.none = array("d", [math.nan] * len(exercises))  # a pair's scores before any
        self.fps, self.weights, self.fixed, self.ids, self.start, self.answer, self.totals = [], [], [], [], [], [], []
        grand = np.zeros(len(groups), dtype=np.int64)
        group_of = np.empty(len(hand_ins), dtype=np.int64)
        for g, members in enumerate(groups):
            group_of[members] = g
        for e in exercises:
            number: dict[bytes, int] = {}  # a distinct answer -> its number, in the order they come
            given = np.full(len(hand_ins), -1, dtype=np.int64)
            for h, hand_in in enumerate(hand_ins):
                packed = hand_in.exercises.get(e)
                if packed:
                    given[h] = number.setdefault(packed, len(number))
            distinct = list(number)
            del number
            flat = np.concatenate([np.frombuffer(a, dtype="<i8") for a in distinct]) if distinct else \
                np.zeros(0, dtype=np.int64)
            lengths = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct)) // 8
            start = np.zeros(len(distinct) + 1, dtype=np.int64)
            np.cumsum(lengths, out=start[1:])
            fps = np.unique(flat)
            ids = np.searchsorted(fps, flat).astype(np.int32)
            del flat
            # df: the hand-ins (not groups) that answer with each fingerprint
            answered = given[given >= 0]
            per_answer = np.bincount(answered, minlength=len(distinct))
            df = np.bincount(ids, weights=np.repeat(per_answer, lengths), minlength=len(fps)).astype(np.int64)
            counts, back = np.unique(df, return_inverse=True)
            table = np.array([math.log(1 + len(answered) / n) for n in counts.tolist()], dtype=np.float64)
            weights = table[back.reshape(-1)] if len(fps) else np.zeros(0)
            fixed = np.rint(weights * SCALE).astype(np.int64)
            totals = _segment_sums(fixed[ids], start)
            answer = np.full(len(groups), -1, dtype=np.int64)
            answer[group_of] = given  # members of a group give the same answers
            grand += np.where(answer >= 0, totals[np.maximum(answer, 0)] if len(totals) else 0, 0)
            for name, value in (("fps", fps), ("weights", weights), ("fixed", fixed), ("ids", ids), ("start", start),
                                ("answer", answer), ("totals", totals)):
                getattr(self, name).append(value)
        self.grand_totals = grand.tolist()

    def scores(self, pairs: np.ndarray):
        """A GroupPair for each pair of groups (`pairs`: keys a * groups + b, a < b, ascending), in order.

        For each a, its answer's fingerprints are marked with their weights in one array as long as the
        exercise's distinct fingerprints; the shared weight with each of its partners is then the sum of
        the marks at the partner's fingerprints (one gather and one cumulative sum for all of them)."""
        if not len(pairs):
            return
        firsts, seconds = np.divmod(pairs, self.groups)
        cuts = np.flatnonzero(np.diff(firsts)) + 1
        marks = [np.zeros(len(fps), dtype=np.int64) for fps in self.fps]
        n = len(self.exercises)
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(pairs)]):
            a, partners = int(firsts[lo]), seconds[lo:hi]
            shared = np.zeros((len(partners), n), dtype=np.int64)
            both = np.zeros((len(partners), n), dtype=bool)
            for i in range(n):
                mine = self.answer[i][a]
                if mine < 0:
                    continue
                theirs = self.answer[i][partners]
                has = theirs >= 0
                if not has.any():
                    continue
                start, ids, mark = self.start[i], self.ids[i], marks[i]
                own = ids[start[mine]:start[mine + 1]]
                mark[own] = self.fixed[i][own]
                given = theirs[has]
                firsts_of, lengths = start[given], start[given + 1] - start[given]
                ends = np.cumsum(lengths)
                at = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(firsts_of - (ends - lengths), lengths)
                sums = np.concatenate(([0], np.cumsum(mark[ids[at]])))
                shared[has, i] = sums[ends] - sums[ends - lengths]
                both[has, i] = True
                mark[own] = 0
            totals_a = [int(self.totals[i][self.answer[i][a]]) if self.answer[i][a] >= 0 else 0 for i in range(n)]
            for row, b in enumerate(partners.tolist()):
                yield self._pair(a, b, shared[row].tolist(), both[row].tolist(), totals_a)

    def _pair(self, a: int, b: int, shared: list[int], both: list[bool], totals_a: list[int]) -> GroupPair:
        scores = self.none[:]
        shared_all = 0
        for i in range(len(self.exercises)):
            if not both[i]:
                continue
            s = shared[i]
            union = totals_a[i] + int(self.totals[i][self.answer[i][b]]) - s
            if s > 0 and union > 0:
                scores[i] = s / union
            shared_all += s
        union_all = self.grand_totals[a] + self.grand_totals[b] - shared_all
        return GroupPair(a, b, shared_all / union_all if union_all > 0 else 0.0, scores, shared_all / SCALE,
                         self.exercises)


def _segment_sums(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    sums = np.zeros(len(values) + 1, dtype=values.dtype)
    np.cumsum(values, out=sums[1:])
    return sums[start[1:]] - sums[start[:-1]]


def identical_groups(hand_ins: list[HandIn]) -> list[list[int]]:
    by_key: dict[frozenset, list[int]] = {}
    for i, h in enumerate(hand_ins):
        by_key.setdefault(frozenset(h.exercises.items()), []).append(i)
    return list(by_key.values())


def candidate_pairs(answers: Answers) -> np.ndarray:
    """The pairs of groups worth scoring, as keys a * groups + b (a < b), ascending.

    Each exercise's fingerprints are indexed (which groups answer with each); each distinct answer then
    probes the index with its PROBES rarest fingerprints that someone else shares (and that are not in
    more than max(MIN_COMMON_CAP, 4 sqrt(groups)) groups: too common to point at anyone): of the partners
    that half those probes reach (MIN_HITS at least), the PARTNERS reached most (ties: the one reached
    first) are candidates. A copy shares the rarest of what it copied, so it is found; one statement
    that many write (`torch.sin(x)`) reaches many partners, each with its few fingerprints, and proposes
    none of them alone; and an answer proposes a bounded number of partners, so the pairs grow with the
    class, not its square. Equal answers probe once for all the groups that gave them."""
    groups = answers.groups
    cap = max(MIN_COMMON_CAP, int(4 * math.sqrt(groups)))
    found = array("q")
    for i in range(len(answers.exercises)):
        answer, start, ids = answers.answer[i], answers.start[i], answers.ids[i]
        givers = np.flatnonzero(answer >= 0)
        if not len(givers):
            continue
        given = answer[givers]
        # the index: each fingerprint's groups, ascending (from every group's answer, in group order)
        lengths = start[given + 1] - start[given]
        ends = np.cumsum(lengths)
        at = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(start[given] - (ends - lengths), lengths)
        occurrences = ids[at]
        order = np.argsort(occurrences, kind="stable")
        postings = np.repeat(givers, lengths)[order]
        del at, order
        bounds = np.zeros(len(answers.fps[i]) + 1, dtype=np.int64)
        np.cumsum(np.bincount(occurrences, minlength=len(answers.fps[i])), out=bounds[1:])
        del occurrences
        df = np.diff(bounds)
        members: dict[int, list[int]] = defaultdict(list)  # answer -> its groups, in order of first giver
        for g, k in zip(givers.tolist(), given.tolist()):
            members[k].append(g)
        for k, gs in members.items():
            own = ids[start[k]:start[k + 1]]
            n = df[own]
            usable = (n > 1) & (n <= cap)
            if not usable.any():
                continue
            probes = own[usable][np.argsort(n[usable], kind="stable")[:PROBES]]  # (df, fingerprint) ascending
            need = max(MIN_HITS, len(probes) // 2)
            reached = np.concatenate([postings[bounds[p]:bounds[p + 1]] for p in probes.tolist()])
            partners, first, hits = np.unique(reached, return_index=True, return_counts=True)
            best = np.lexsort((first, -hits))[:PARTNERS + 1]  # most hits first; ties: the one reached first
            ranked = list(zip(partners[best].tolist(), hits[best].tolist()))
            for g in gs:
                for h, hit in [(h, hit) for h, hit in ranked if h != g][:PARTNERS]:
                    if hit >= need:
                        found.append(min(g, h) * groups + max(g, h))
        del postings, bounds, df
    return np.unique(np.frombuffer(found, dtype=np.int64)) if found else np.zeros(0, dtype=np.int64)
