"""Public tests for graph.py: small, fixed inputs from the lecture."""

import torch

from grader.cases.kit import Fail, Graph, close, docstring_examples, result_tensor, returned, tensor, unchanged


def test_graph_node_counts_lecture(student):
    """The lecture's graph y = (w + x) * (w + 1): one Mul, two Adds, and w's AccumulateGrad, counted once
    although two paths reach it. Follow grad_fn.next_functions and skip None entries.
    课上的计算图 y = (w + x) * (w + 1)：一个 Mul、两个 Add，以及 w 的 AccumulateGrad（两条路径到达，只计一次）。
    沿 grad_fn.next_functions 遍历并跳过 None。"""
    call = student.call("graph_node_counts", Graph("lecture", (torch.tensor([1.0]), torch.tensor([2.0]))))
    counts = returned(call, dict)
    expected = {"MulBackward0": 1, "AddBackward0": 2, "AccumulateGrad": 1}
    if counts != expected:
        # w's AccumulateGrad is reached along two paths: counted twice without a set of visited nodes
        twice = counts == {**expected, "AccumulateGrad": 2}
        raise Fail("wrong node counts / 节点计数不对", f"got {counts}, expected {expected}",
                   mistake="counted_twice" if twice else None)


def test_make_leaf_lecture(student):
    """make_leaf returns a new leaf that requires grad, with the same values, dtype and device, sharing
    no storage with t; t itself is not changed.
    With dtype=torch.float64 it is still a leaf: convert first, then requires_grad_.
    make_leaf 返回一个新的、requires_grad=True 的叶子张量，数值、dtype、设备与 t 相同，且不与 t 共享存储；t 本身不变。
    指定 dtype=torch.float64 时结果仍是叶子张量：先转换，再 requires_grad_。"""
    t = torch.tensor([1.0, 2.0])
    call = student.call("make_leaf", t)
    leaf = tensor(returned(call), "the leaf", shape=(2,), dtype=torch.float32, device=call.device, detached=False)
    if not (leaf.requires_grad and leaf.is_leaf):
        raise Fail(f"the result must be a leaf with requires_grad=True (got requires_grad={leaf.requires_grad}, "
                   f"is_leaf={leaf.is_leaf}) / 结果应是 requires_grad=True 的叶子张量")
    if leaf.same_as_arg is not None or leaf.shares_storage_with_arg is not None:
        raise Fail("the result shares storage with t: make a copy (clone) / 结果与 t 共享存储：请复制（clone）",
                   mistake="shares_storage")
    close(leaf, t, "the leaf")
    unchanged(call, "t")
    # the conversion the docstring warns about: requires_grad_ before .to(dtype) makes a non-leaf
    call = student.call("make_leaf", t, dtype=torch.float64)
    leaf = tensor(returned(call), "the leaf", shape=(2,), dtype=torch.float64, device=call.device, detached=False)
    if not leaf.is_leaf:
        raise Fail("make_leaf(t, dtype=torch.float64) is not a leaf / make_leaf(t, dtype=torch.float64) 不是叶子张量",
                   mistake="not_a_leaf")
    close(leaf, t.double(), "the leaf")


def test_intermediate_grads_small(student):
    """z = x @ w + b = [2, -2], a = relu(z) = [2, 0], loss = mean((a - 1) ** 2) = 1: dloss/da = [1, -1], and
    relu passes no gradient where z < 0, so dloss/dz = [1, 0]. Call retain_grad() on z and a before backward,
    or their .grad stays None.
    z = x @ w + b = [2, -2]，a = relu(z) = [2, 0]，loss = mean((a - 1) ** 2) = 1：dloss/da = [1, -1]，
    relu 在 z < 0 处不传递梯度，所以 dloss/dz = [1, 0]。backward 之前要对 z 和 a 调用 retain_grad()，
    否则它们的 .grad 是 None。"""
    x, w, b = torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0, -1.0], [0.5, 1.0]]), torch.tensor([0.0, -3.0])
    call = student.call("intermediate_grads", x, w, b)
    grads = returned(call, dict)
    expected = {"z": [[1.0, 0.0]], "a": [[1.0, -1.0]], "w": [[1.0, 0.0], [2.0, 0.0]], "b": [1.0, 0.0]}
    for key, want in expected.items():
        want = torch.tensor(want)
        _retained(grads, key)
        close(result_tensor(call, grads.get(key), f"grads[{key!r}]", like=want), want, f"grads[{key!r}]",
              mistakes=_intermediate_mistakes(key, expected, want.dtype))
    unchanged(call, "x", "w", "b")


def _intermediate_mistakes(key: str, expected: dict, dtype: torch.dtype) -> dict:
    """What known mistakes give for grads[key] on the small example: the loss summed instead of
    averaged over its 2 elements doubles every gradient; dloss/da returned as dloss/dz skips relu."""
    mistakes = {"wrong_loss": 2 * torch.tensor(expected[key], dtype=dtype)}
    if key == "z":
        mistakes["relu_skipped"] = torch.tensor(expected["a"], dtype=dtype)
    return mistakes


def _retained(grads: dict, key: str) -> None:
    """z and a are not leaves: their .grad is None unless retain_grad() was called before backward."""
    if key in ("z", "a") and grads.get(key) is None:
        raise Fail(f"grads[{key!r}] is None / grads[{key!r}] 是 None", mistake="no_retain_grad")


def test_dynamic_doubling_lecture(student):
    """a = [0.5, -0.25, 1.0]: b = 2a, then the loop doubles b 9 times until its norm reaches 1000; the sum is
    positive, so c = b and dc/da = 2 ** 10 for every element.
    a = [0.5, -0.25, 1.0]：b = 2a，循环把 b 加倍 9 次直到范数达到 1000；和为正，所以 c = b，每个元素的梯度都是 2 ** 10。"""
    a = torch.tensor([0.5, -0.25, 1.0])
    call = student.call("dynamic_doubling", a)
    c, grad, steps = returned(call, tuple, 3)
    close(result_tensor(call, c, "c", like=a), torch.tensor([512.0, -256.0, 1024.0]), "c")
    close(result_tensor(call, grad, "grad", like=a), torch.full((3,), 1024.0), "grad")
    if type(steps) is not int or steps != 9:
        raise Fail("steps should be the int 9 / steps 应为整数 9", f"got {steps!r}",
                   mistake="steps_off_by_one" if steps == 10 else None)  # the first b = a * 2 counted as a step
    unchanged(call, "a")


def test_graph_node_counts_docstring(student):
    """The examples in graph_node_counts's docstring give what they show (python -m doctest, on your code).
    graph_node_counts 文档字符串中的示例给出其中写明的结果。"""
    # the last example's w is a leaf: its grad_fn is None, where the walk must not start
    docstring_examples(student, "graph_node_counts", errors={3: {"'NoneType'": "no_grad_fn"}})


def test_make_leaf_docstring(student):
    """The examples in make_leaf's docstring give what they show (python -m doctest, on your code).
    make_leaf 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "make_leaf")


def test_intermediate_grads_docstring(student):
    """The examples in intermediate_grads's docstring give what they show (python -m doctest, on your code).
    intermediate_grads 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "intermediate_grads")


def test_dynamic_doubling_docstring(student):
    """The examples in dynamic_doubling's docstring give what they show (python -m doctest, on your code).
    dynamic_doubling 文档字符串中的示例给出其中写明的结果。"""
    # the second example takes the c = 100 * b branch: a gradient written by hand as 2 ** 10 misses the 100
    docstring_examples(student, "dynamic_doubling",
                       wrong={1: {"unscaled_branch": "(tensor([-102400.]), tensor([1024.]), 9)"}})


def test_intermediate_grads_float64(student):
    """The small example in float64: the gradients come back in float64, the arguments' dtype.
    float64 下的小例子：返回的梯度也是 float64，与参数的 dtype 相同。"""
    x, w, b = (torch.tensor(v, dtype=torch.float64) for v in ([[1.0, 2.0]], [[1.0, -1.0], [0.5, 1.0]], [0.0, -3.0]))
    call = student.call("intermediate_grads", x, w, b)
    grads = returned(call, dict)
    expected = {"z": [[1.0, 0.0]], "a": [[1.0, -1.0]], "w": [[1.0, 0.0], [2.0, 0.0]], "b": [1.0, 0.0]}
    for key, want in expected.items():
        want = torch.tensor(want, dtype=torch.float64)
        _retained(grads, key)
        close(result_tensor(call, grads.get(key), f"grads[{key!r}]", like=want), want, f"grads[{key!r}]",
              mistakes=_intermediate_mistakes(key, expected, want.dtype))
