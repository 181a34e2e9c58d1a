"""The course file agrees with the stubs, the solutions and the test files, and bad course files are refused."""

import ast
import re
import shutil

import pytest
import yaml

from grader import catalog
from grader.cases import examples
from grader.catalog import CatalogError

from conftest import ROOT, SOLUTIONS, STUBS

COURSE = catalog.load()


def defined(folder, module: str) -> set[str]:
    tree = ast.parse((folder / module).read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_the_default_course_is_the_package_file_and_names_this_checkouts_folders():
    assert COURSE.path == catalog.DEFAULT_COURSE
    assert COURSE.place("stubs") == STUBS and COURSE.place("solutions") == SOLUTIONS
    assert COURSE.place("learner_mistakes") == ROOT / "tests" / "submissions" / "wrong"
    assert COURSE.folder("public") == catalog.CASES_DIR / "public" and COURSE.folder("hidden") == catalog.CASES_DIR / "hidden"
    assert all(h.is_file() and h.parent == COURSE.folder("public") for h in COURSE.helpers)


def test_every_module_holds_its_exercises_in_the_stubs_and_the_solutions():
    assert COURSE.modules == sorted(COURSE.modules, key=COURSE.modules.index)  # `modules:` order
    for module in COURSE.modules:
        assert COURSE.exercises_in(module), module
        for folder in (STUBS, SOLUTIONS):
            assert set(COURSE.exercises_in(module)) <= defined(folder, module), (folder, module)
    assert sorted(p.name for p in STUBS.glob("*.py")) == sorted(COURSE.modules)


def test_every_exercise_has_public_and_hidden_tests():
    for e in COURSE.exercises:
        assert {t.folder for t in e.tests} == {"public", "hidden"}, e.name
        assert e.max_score > 0


def test_test_functions_and_course_file_agree():
    for folder in catalog.FOLDERS:
        found = set()
        for path in COURSE.folder(folder).glob("test_*.py"):
            tree = ast.parse(path.read_text())
            found |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
        listed = {t.name for e in COURSE.exercises for t in [*e.tests, e.property_spec] if t and t.folder == folder}
        assert found == listed, folder


def test_the_repair_exercise_ships_code_and_the_others_raise():
    """`repair: true` is the one fact the bundle's stub check needs: those stubs run, the others raise."""
    from grader.exports.bundle import stub_functions

    repair = {e.name for e in COURSE.exercises if e.repair}
    assert repair  # this course has one: a stub that raises the version counter error
    for module in COURSE.modules:
        written = {name.split(".")[0] for name in stub_functions((STUBS / module).read_bytes())[1]}
        assert written == repair & set(COURSE.exercises_in(module)), module


MINIMAL = {"exercises": {"x": {"module": "a.py", "public": {"t": 1}}}}


@pytest.mark.parametrize("data, message", [
    ({}, "needs `exercises:`"),
    ({"exercises": {"x": {"public": {"t": 1}}}}, "module"),
    ({"exercises": {"x": {"module": "a.py"}}}, "lists no tests"),
    ({"exercises": {"x": {"module": "a.py", "public": {"t": -1}}}}, "points"),
    ({"exercises": {"x": {"module": "a.py", "public": {"t": 1}}, "y": {"module": "a.py", "public": {"t": 1}}}}, "both"),
    ({**MINIMAL, "points": 3}, "unknown keys \\['points'\\]"),
    ({**MINIMAL, "modules": {"b.py": {}}}, "its module a.py is not one of `modules:`"),
    ({"modules": {"a.py": {}, "b.py": {}}, **MINIMAL}, "modules without an exercise: b.py"),
    ({"exercises": {"x": {"module": "a.py", "public": {"t": 1}, "repair": "yes"}}}, "'repair' is true or false"),
    ({"exercises": {"x": {"module": "a.py", "public": {"t": 1}, "hint": 1}}}, "unknown keys \\['hint'\\]"),
    ({**MINIMAL, "helpers": "h.py"}, "`helpers:` is a list"),
])
def test_bad_course_files_are_refused(data, message):
    with pytest.raises(CatalogError, match=message):
        catalog.parse(data)


@pytest.mark.parametrize("data, message", [
    ({"exercises": {"x": {"module": "a.py", "general": "t", "public": {"t": 1}}}}, "list of test names"),
    ({"exercises": {"x": {"module": "a.py", "general": ["nope"], "public": {"t": 1}}}}, "general names tests it does not list: nope"),
    ({"exercises": {"x": {"module": "a.py", "public": {"t": True}}}}, "points"),
])
def test_bad_general_cases_are_refused(data, message):
    with pytest.raises(CatalogError, match=message):
        catalog.parse(data)


@pytest.mark.parametrize("mistakes, message", [
    ({"Bad-Key": {"en": "a", "zh": "b"}}, "lower_case identifiers"),
    ({"k": {"en": "a"}}, "needs 'en' and 'zh'"),
    ({"k": {"en": "a", "zh": "b", "hint": "c"}}, "unknown fields"),
])
def test_bad_mistakes_are_refused(mistakes, message):
    for data in ({**MINIMAL, "mistakes": mistakes},
                 {"exercises": {"x": {**MINIMAL["exercises"]["x"], "mistakes": mistakes}}}):
        with pytest.raises(CatalogError, match=message):
            catalog.parse(data)


def test_a_missing_or_broken_course_file_is_a_clear_error(tmp_path):
    with pytest.raises(CatalogError, match="cannot read the course file"):
        catalog.load(tmp_path / "nope.yaml")
    (tmp_path / "course.yaml").write_text("exercises: [unclosed\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        catalog.load(tmp_path)  # a folder means its course.yaml


def test_every_exercise_has_a_docstring_check_worth_nothing():
    for e in COURSE.exercises:
        checks = [t for t in e.tests if t.name.endswith("_docstring")]
        assert len(checks) == 1 and checks[0].folder == "public" and checks[0].points == 0, e.name


def test_the_docstring_examples_come_from_the_stubs():
    """In a checkout the examples are read from the stubs (the bundle and the autograders carry them
    as examples.json, written when they are exported): there is no copy to keep in step."""
    assert not (COURSE.folder("public") / examples.EXAMPLES_FILE).exists()
    assert examples.load(COURSE) == examples.extract(STUBS)
    assert set(examples.load(COURSE)) == {e.name for e in COURSE.exercises}, "every exercise shows an example"


def test_every_mistake_key_the_cases_name_is_in_the_catalogue():
    """Keys named in the cases (mistake="...", mistakes={...}, errors={...}) resolve for their exercise."""
    listed = set(COURSE.common_mistakes) | {key for e in COURSE.exercises for key in e.mistakes}
    named = set()
    for path in catalog.CASES_DIR.rglob("test_*.py"):
        text = path.read_text()
        named |= set(re.findall(r'mistake="([a-z_0-9]+)"', text))
        named |= set(re.findall(r'"([a-z_0-9]+)": (?:oracle|want|v \*|u \*|torch|sig|\(sig)', text))
        named |= set(re.findall(r'": "([a-z_0-9]+)"', text))
    assert named and named <= listed, sorted(named - listed)


def test_an_exercises_own_mistake_comes_before_the_common_one():
    assert COURSE.error_mistake("hvp", "NotImplementedError: not yet") == "not_implemented"
    assert COURSE.mistake("hvp", "hvp_of_sum").described("hvp")["id"] == "hvp.hvp_of_sum"
    with pytest.raises(CatalogError, match="is not listed in course.yaml"):
        COURSE.mistake("hvp", "no_such_mistake")


def test_the_tests_fingerprint_follows_the_course(tmp_path):
    """The course file, its tests, its helpers and its stubs (their examples) make the fingerprint."""
    copy = tmp_path / "cases"
    shutil.copytree(catalog.CASES_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(STUBS, tmp_path / "exercises")
    data = yaml.safe_load((copy / "course.yaml").read_text())
    data["stubs"] = "../exercises"
    (copy / "course.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    base = catalog.tests_sha256(catalog.load(copy / "course.yaml"))
    for path in (copy / "hidden" / "test_grad.py", copy / "public" / "helpers.py", tmp_path / "exercises" / "grad.py"):
        before = path.read_text()
        path.write_text(before + "\n# a comment\n")
        assert catalog.tests_sha256(catalog.load(copy / "course.yaml")) != base, path
        path.write_text(before)
    assert catalog.tests_sha256(catalog.load(copy / "course.yaml")) == base
