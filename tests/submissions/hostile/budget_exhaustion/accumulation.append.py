

# ---- attack: spend the submission's time budget with many slow calls -------------------------------------------
# Every function of grad.py, graph.py, backward.py and accumulation.py sleeps @@SLEEP@@ s before
# answering correctly: no single call is over the limit, but together they are over the
# submission's budget. The grading run must stop at the budget, not at the sum.
import time as _time

for _name in ("grads_per_step", "accumulate_microbatches", "gd_fit"):
    def _slow(*args, _f=globals()[_name], **kwargs):
        _time.sleep(@@SLEEP@@)
        return _f(*args, **kwargs)
    globals()[_name] = _slow
