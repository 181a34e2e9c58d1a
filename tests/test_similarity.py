"""`grader similarity` on real hand-ins: the corpus's disguised copies rank above every independent pair,
the stub is never evidence, the 74 sample submissions are one cluster, unreadable hand-ins are listed,
the independent hand-ins are correct, and the command writes a page and a CSV.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
import zipfile

import pytest
import torch

import similarity_corpus as sc
from conftest import ROOT
from grader import catalog
from grader.similarity import handins, index, normalize
from grader.similarity.fingerprints import fingerprints

sys.path.insert(0, str(ROOT / "bench"))
import make_submissions  # noqa: E402

COURSE = catalog.load()
EXERCISES = [e.name for e in COURSE.exercises]


def review_of(folders):
    stub = handins.stub_fingerprints(COURSE)
    return index.review([handins.read(f, COURSE, stub) for f in folders], EXERCISES)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus") / "class"
    origins = sc.make_corpus(out, set(EXERCISES), {e.name: e.module for e in COURSE.exercises})
    return origins, review_of(sorted(out.iterdir()))


def test_every_disguised_copy_ranks_above_every_independent_pair(corpus):
    origins, result = corpus
    for e in EXERCISES:
        labels = sc.pair_labels(origins, e)
        assert any(labels.values()) and not all(labels.values()), e  # both kinds of pairs for each exercise
        scores = {(p.a, p.b): p.by_exercise.get(e, 0.0) for p in result.pairs(None, exercise=e)}
        above, copies = sc.recall_at_first_independent(scores, labels)
        assert above == copies, f"{e}: {above} of {copies} copy pairs above the best independent pair"


def test_a_copied_exercise_inside_independent_work_is_found(corpus):
    _, result = corpus
    by_pair = {(p.a, p.b): p for p in result.pairs(None)}
    pair = by_pair[("independent-loops-copies-extensions", "ref")]
    assert pair.by_exercise["SmoothAbs"] > 0.5
    assert "hvp" not in pair.by_exercise or pair.by_exercise["hvp"] < 0.3


def test_clusters_per_exercise_find_a_module_passed_round_inside_independent_work(corpus):
    """The independent hand-ins that copied extensions.py join the reference's cluster for SmoothAbs,
    not the overall one; a learner who rewrote SmoothAbs (a mistake of their own) is in the overall
    cluster and not SmoothAbs's; and no exercise's cluster holds an answer written independently."""
    origins, result = corpus
    copied = {"independent-functional-copies-extensions", "independent-loops-copies-extensions"}
    (overall,) = [c for c in result.clusters if "ref" in c]
    (smooth,) = [c for c in result.exercise_clusters["SmoothAbs"] if "ref" in c]
    assert copied <= set(smooth) and not copied & set(overall)
    rewrote = {h for h, o in origins.items() if o.get("SmoothAbs", "ref").startswith("wrong-")}
    assert rewrote and rewrote <= set(overall) and not rewrote & set(smooth)
    assert set(result.exercise_clusters) == set(EXERCISES)
    for e, found in result.exercise_clusters.items():
        for cluster in found:
            assert not [h for h in cluster if origins[h][e].startswith("independent-")], (e, cluster)


def test_disguises_normalise_to_the_same_units():
    plain = "def f(a, b):\n    c = a + b\n    c += torch.add(a, b)\n    return c\n"
    disguised = ("def f(x, y):  # mine\n    '''doc'''\n    z = torch.add(x, y)\n\n    z = z + (x + y)\n    return z\n")
    units = [normalize.exercise_units(normalize.parse(s), ("f",))["f"] for s in (plain, disguised)]
    assert fingerprints(units[0]) == fingerprints(units[1])
    reordered = "def f(a, b):\n    d = a * 2\n    c = b * 3\n    return c + d\n"
    ordered = "def f(a, b):\n    c = b * 3\n    d = a * 2\n    return c + d\n"
    units = [normalize.exercise_units(normalize.parse(s), ("f",))["f"] for s in (reordered, ordered)]
    assert fingerprints(units[0]) == fingerprints(units[1])
    inlined = "def f(a):\n    return a.detach().clone()\n"
    helper = "def _h(t):\n    return t.detach().clone()\n\ndef f(a):\n    return _h(a)\n"
    units = [normalize.exercise_units(normalize.parse(s), ("f",))["f"] for s in (inlined, helper)]
    assert fingerprints(units[0]) == fingerprints(units[1])


def test_the_stub_is_never_evidence(tmp_path):
    result = review_of([ROOT / "exercises", ROOT / "exercises", ROOT / "solutions"])
    stub = result.hand_ins[0]
    assert stub.exercises == {} and result.pairs(None) == [] and result.clusters == []


def test_the_74_sample_submissions_are_one_cluster(tmp_path):
    made = make_submissions.make_class(tmp_path / "class", copies=1)
    result = review_of(made)
    assert len(made) == 74
    assert len(result.clusters) == 1 and len(result.clusters[0]) == 73  # all but the untouched stubs
    assert "stubs-001" not in result.clusters[0]


def test_unreadable_hand_ins_are_listed_not_fatal(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "grad.py").write_text("def hvp(:\n", encoding="utf-8")
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        for p in (ROOT / "solutions").glob("*.py"):
            zf.write(p, f"exercises/{p.name}")
    result = review_of([broken, tmp_path / "bad.zip", good, ROOT / "solutions"])
    problems = {h.name: h.problems for h in result.hand_ins}
    assert any("grad.py cannot be read" in p for p in problems["broken"])
    assert problems["bad"] and not problems["good"]
    assert [(p.a, p.b, p.overall) for p in result.pairs(None)] == [("good", "solutions", 1.0)]


def test_notebook_hand_ins_are_read_like_their_modules(tmp_path):
    """A folder of .ipynb hand-ins: the reference as a notebook and as a Colab copy are the .py
    reference's twins; a truncated notebook is listed, not fatal."""
    from notebook_support import colab_copy, exported, with_reference, write

    class_folder = tmp_path / "class"
    class_folder.mkdir()
    reference = with_reference(exported())
    write(reference, class_folder / "nb_reference.ipynb")
    write(colab_copy(reference), class_folder / "nb_colab.ipynb")
    (class_folder / "nb_truncated.ipynb").write_text(write(reference, tmp_path / "x.ipynb").read_text()[:5000])
    paths = handins.expand([str(class_folder)]) + [str(ROOT / "solutions")]
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["nb_colab.ipynb", "nb_reference.ipynb", "nb_truncated.ipynb", "solutions"]
    result = review_of(paths)
    problems = {h.name: h.problems for h in result.hand_ins}
    assert any("malformed or truncated" in p for p in problems["nb_truncated"])
    twins = {(p.a, p.b): p.overall for p in result.pairs(None)}
    assert twins == {("nb_colab", "nb_reference"): 1.0, ("nb_colab", "solutions"): 1.0, ("nb_reference", "solutions"): 1.0}


def _module(path):
    spec = importlib.util.spec_from_file_location(f"indep_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("style", ["loops", "functional"])
def test_the_independent_hand_ins_are_correct(style):
    """Independent means written otherwise, not wrong: each answer agrees with the reference."""
    torch.manual_seed(0)
    ref = {m: _module(ROOT / "solutions" / f"{m}.py") for m in ("graph", "backward", "grad", "accumulation", "inplace",
                                                                 "extensions")}
    own = {m: _module(sc.INDEPENDENT / style / f"{m}.py") for m in ref}
    w, x, v = (torch.randn(4, dtype=torch.float64) for _ in range(3))
    cube = lambda t: (t ** 3).sum()  # noqa: E731
    calls = {
        ("backward", "two_losses_grad"): (w, x), ("backward", "weighted_backward"): (w, x, torch.randn(8, dtype=torch.float64)),
        ("extensions", "numerical_gradient"): (cube, x), ("extensions", "frozen_predict"): (torch.randn(4, 2), torch.randn(3, 4)),
        ("grad", "partial_grads"): (lambda a, b: (a * b.sin()).sum(), w, x), ("grad", "hvp"): (cube, x, v),
        ("inplace", "add_into"): (w.clone(), x, False), ("inplace", "shifted_sigmoid_and_grad"): (x, 0.5),
        ("inplace", "safe_add_"): (w.clone().requires_grad_(), x),
        ("graph", "make_leaf"): (x, torch.float32, "cpu"), ("graph", "dynamic_doubling"): (x,),
        ("graph", "intermediate_grads"): (torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64),
                                          torch.randn(2, dtype=torch.float64)),
        ("grad", "nth_derivative"): (lambda t: t.sin() * t, x, 3), ("grad", "jacobian_rows"): (lambda t: t.cumsum(0) ** 2, x),
        ("accumulation", "grads_per_step"): (w, [x, v]),
        ("accumulation", "accumulate_microbatches"): (torch.randn(2, dtype=torch.float64), torch.randn(5, 2, dtype=torch.float64),
                                                      torch.randn(5, dtype=torch.float64), 2),
        ("accumulation", "gd_fit"): (torch.randn(5, 2, dtype=torch.float64), torch.randn(5, dtype=torch.float64),
                                     torch.zeros(2, dtype=torch.float64), 0.1, 3),
    }
    for (module, name), args in calls.items():
        expected, got = getattr(ref[module], name)(*args), getattr(own[module], name)(*args)
        if isinstance(expected, dict):
            expected, got = tuple(expected[k] for k in sorted(expected)), tuple(got[k] for k in sorted(got))
        for e, g in zip(expected if isinstance(expected, tuple) else (expected,), got if isinstance(got, tuple) else (got,)):
            if isinstance(e, torch.Tensor):
                torch.testing.assert_close(g.detach(), e.detach(), msg=f"{style} {name}")
            else:
                assert g == e, (style, name)
    out = (w.clone().requires_grad_() * 2).exp().sum()
    assert own["graph"].graph_node_counts(out) == ref["graph"].graph_node_counts(out)
    y = own["extensions"].SmoothAbs.apply(x.clone().requires_grad_(), 1e-3)
    r = ref["extensions"].SmoothAbs.apply(x.clone().requires_grad_(), 1e-3)
    torch.testing.assert_close(y, r)


def test_the_command_writes_the_page_and_the_csv(tmp_path, corpus):
    made = make_submissions.make_class(tmp_path / "class", total=6)
    result = subprocess.run([sys.executable, "-m", "grader", "similarity", str(tmp_path / "class"), str(ROOT / "exercises"),
                             "--out", str(tmp_path / "s.html"), "--csv", str(tmp_path / "s.csv")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "s.html").read_text(encoding="utf-8")
    assert "evidence for a person to review, not proof" in page and "http" not in page
    rows = list(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8")))
    assert {(r["a"], r["b"]) for r in rows} >= {("reference-001", "wrong-add_into_out_buffer_default_dtype-001")}
    assert all(r["a"] != "exercises" and r["b"] != "exercises" for r in rows) and len(made) == 6


def _everything(result):
    """All a review says: its pairs with their scores, its rankings per exercise, its clusters."""
    ranked = {e: [(p.a, p.b, p.overall, p.by_exercise) for p in result.pairs(exercise=e)] for e in EXERCISES}
    return [(p.a, p.b, p.overall, p.shared, p.by_exercise) for p in result.pairs()], ranked, \
        result.clusters, result.exercise_clusters


def test_reading_in_processes_gives_what_reading_here_gives(tmp_path, monkeypatch):
    """The corpus and sample hand-ins (an unreadable one among them), read in 2 processes 3 hand-ins at a
    time, then reviewed: the same hand-ins, fingerprints, problems, pairs, scores and clusters as read
    in this process (the fingerprints' hashes are the same in every process)."""
    sc.make_corpus(tmp_path / "class", set(EXERCISES), {e.name: e.module for e in COURSE.exercises})
    make_submissions.make_class(tmp_path / "class", total=8)
    (tmp_path / "class" / "broken").mkdir()
    (tmp_path / "class" / "broken" / "grad.py").write_text("def hvp(:\n", encoding="utf-8")
    paths = handins.expand([str(tmp_path / "class")])
    here = handins.read_all(paths, COURSE, jobs=1)
    monkeypatch.setattr(handins, "PARALLEL_FROM", 1)
    monkeypatch.setattr(handins, "CHUNK", 3)
    there = handins.read_all(paths, COURSE, jobs=2)
    assert len(paths) > 20 and here == there
    assert any("grad.py cannot be read" in p for h in there if h.name == "broken" for p in h.problems)
    assert _everything(index.review(here, EXERCISES)) == _everything(index.review(there, EXERCISES))


def test_the_same_class_gives_the_same_csv_whatever_the_hash_seed(tmp_path):
    """Python's string hashes change with PYTHONHASHSEED; the review's order and ties do not."""
    make_submissions.make_class(tmp_path / "class", total=6)
    out = []
    for seed in ("1", "2"):
        result = subprocess.run([sys.executable, "-m", "grader", "similarity", str(tmp_path / "class"),
                                 str(ROOT / "exercises"), "--out", str(tmp_path / "s.html"), "--csv", str(tmp_path / "s.csv")],
                                cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr
        out.append((tmp_path / "s.csv").read_text(encoding="utf-8"))
    assert out[0] == out[1] and len(out[0].splitlines()) > 2


def test_a_statement_remembered_by_its_text_normalises_as_it_would_in_its_module(tmp_path):
    """The same line under two different one-line helpers is two normal texts; every module of the
    corpus normalises the same with the texts remembered (read twice: the second time from memory)
    as without them."""
    call = "def hvp(f, x, v):\n    y = helper(x)\n    return y\n"
    times = normalize.exercise_units(normalize.parse(s := "def helper(x):\n    return x * 2\n" + call), ("hvp",), s)
    plus = normalize.exercise_units(normalize.parse(s := "def helper(x):\n    return x + 2\n" + call), ("hvp",), s)
    assert [u.text for u in times["hvp"]] != [u.text for u in plus["hvp"]]
    sc.make_corpus(tmp_path / "class", set(EXERCISES), {e.name: e.module for e in COURSE.exercises})
    modules = sorted((tmp_path / "class").rglob("*.py"))
    assert len(modules) > 50
    for path in modules:
        text, names = path.read_text(encoding="utf-8"), COURSE.exercises_in(path.name)
        plain = normalize.exercise_units(normalize.parse(text), names)
        for _ in range(2):
            assert normalize.exercise_units(normalize.parse(text), names, text) == plain, path


def test_answers_are_packed_and_the_reader_forgets_what_it_remembered(tmp_path, monkeypatch):
    """What a hand-in keeps is packed: per exercise one bytes object of its sorted hashes (8 bytes each,
    about a tenth of a set of ints), equal answers of a class one object; a reader remembers at most SEEN
    modules by content, in the command's own process too (there it was never cleared: memory grew with
    the class)."""
    made = make_submissions.make_class(tmp_path / "class", total=12)
    stub = handins.stub_fingerprints(COURSE)
    one = handins.read(made[0], COURSE, stub)
    assert one.exercises and all(type(p) is bytes and len(p) % 8 == 0 for p in one.exercises.values())
    for e, packed in one.exercises.items():
        fps = handins.unpack(packed)
        assert fps == sorted(set(fps)) and len(packed) == 8 * len(fps)
    read = handins.read_all([str(p) for p in made], COURSE, jobs=1)
    by_value: dict = {}
    for h in read:
        for e, packed in h.exercises.items():
            assert by_value.setdefault((e, packed), packed) is packed  # equal answers: one object
    everything: dict = {}
    for p in made:
        handins.read(p, COURSE, stub, everything)
    monkeypatch.setattr(handins, "SEEN", 3)
    seen: dict = {}
    sizes = []
    for p in made:
        handins.read(p, COURSE, stub, seen)
        sizes.append(len(seen))
    assert len(everything) > 10 and max(sizes) <= 3
    assert [h.exercises for h in handins.read_all([str(p) for p in made], COURSE, jobs=1)] == [h.exercises for h in read]


def test_the_review_sums_weights_exactly_whatever_the_order():
    """Weights are summed in fixed point: an answer shares all its weight with an equal one (1.0, not
    0.9999...), and scores do not depend on the order of the hand-ins."""
    stub = handins.stub_fingerprints(COURSE)
    folders = [ROOT / "solutions", sc.INDEPENDENT / "loops", sc.INDEPENDENT / "functional"]
    read = [handins.read(f, COURSE, stub) for f in folders]
    twin = handins.HandIn("twin", read[0].path, {e: bytes(p) for e, p in read[0].exercises.items()})
    forward = index.review([*read, twin], EXERCISES)
    backward = index.review([twin, *reversed(read)], EXERCISES)
    scores = lambda r: {(p.a, p.b): (p.overall, p.shared, p.by_exercise) for p in r.pairs()}  # noqa: E731
    assert scores(forward) == scores(backward) and scores(forward)[("solutions", "twin")][0] == 1.0
    assert all(v == 1.0 for v in scores(forward)[("solutions", "twin")][2].values())
