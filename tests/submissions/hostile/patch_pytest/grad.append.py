

# ---- attack: patch pytest from the student module -------------------------------------------------
# Every hook that could decide an outcome is replaced so that every test "passes", and the
# grader's own plugin too if it can be found. None of this runs where the tests run.
import pytest
import _pytest.outcomes
import _pytest.python
import _pytest.reports
import _pytest.runner


class _Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False


pytest.approx = lambda *args, **kwargs: _Anything()
_pytest.outcomes.fail = lambda *args, **kwargs: None
_pytest.python.pytest_pyfunc_call = lambda pyfuncitem: True
_pytest.runner.pytest_runtest_call = lambda item: None
_original_init = _pytest.reports.TestReport.__init__


def _passing_init(self, *args, **kwargs):
    _original_init(self, *args, **kwargs)
    self.outcome, self.longrepr = "passed", None


_pytest.reports.TestReport.__init__ = _passing_init
try:  # the grader's plugin, if this interpreter can import it
    import grader.host.plugin as _plugin

    _plugin.classify = lambda excinfo, visible: ("passed", "")
    _plugin.TestOutcome.score = property(lambda self: self.points)
except Exception as exc:  # noqa: BLE001
    print("patch_pytest: no grader.host.plugin here:", type(exc).__name__)


def hvp(f, x, v):
    return x.new_full((x.numel() + 1,), 123.0)  # wrong: shape and values
