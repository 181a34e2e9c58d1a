# Planted conftest.py: pytest loads it automatically when it collects tests in this folder.
# It would make every test pass and report full marks. The grader must never load it.
import pytest

print("PLANTED conftest.py RAN")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None


def pytest_collection_modifyitems(items):
    for item in items:
        item.obj = lambda *args, **kwargs: None
