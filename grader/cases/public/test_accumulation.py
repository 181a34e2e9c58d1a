"""Public tests for accumulation.py."""

import torch

from grader.cases.kit import Arg, Fail, close, docstring_examples, result_tensor, returned, unchanged


def test_grads_per_step_lecture(student):
    """w = 1 and xs = [2, 3]: y = (w + x) * (w + 1) has dy/dw = 2w + x + 1, so 5 then 6, because the
    gradient is zeroed after each step (w.grad.zero_()).
    w = 1，xs = [2, 3]：dy/dw = 2w + x + 1，依次为 5 和 6，因为每一步之后都清零了梯度（w.grad.zero_()）。"""
    w, xs = torch.tensor([1.0]), [torch.tensor([2.0]), torch.tensor([3.0])]
    call = student.call("grads_per_step", w, xs)
    # not zeroed: the second row is 5 + 6 = 11; w.grad itself recorded: the zero_() after it wipes every row
    close(result_tensor(call, returned(call), "the stack of gradients", like=w, shape=(2, 1)),
          torch.tensor([[5.0], [6.0]]), "the stack of gradients",
          mistakes={"not_zeroed": torch.tensor([[5.0], [11.0]]), "recorded_alias": torch.zeros(2, 1)})
    unchanged(call, "w", "xs")


def test_accumulate_microbatches_small(student):
    """X = [[1], [2], [3]], Y = 0, w = [1], batch_size 2: the full-batch gradient 2/N X^T (X w - Y) = 28/3,
    made of a 2-row and a 1-row micro-batch, each loss divided by N = 3 (not by its own size).
    X = [[1], [2], [3]]，Y = 0，w = [1]，batch_size 为 2：全批次梯度 2/N X^T (X w - Y) = 28/3，
    由 2 行和 1 行两个 micro-batch 累加而成，每个损失都除以 N = 3（而不是它自己的行数）。"""
    w, X, Y = torch.tensor([1.0]), torch.tensor([[1.0], [2.0], [3.0]]), torch.zeros(3)
    call = student.call("accumulate_microbatches", w, X, Y, 2)
    # each micro-batch's own mean: 5 + 18 = 23; that sum divided by the 2 steps: 11.5
    close(result_tensor(call, returned(call), "the gradient", like=w), torch.tensor([28.0 / 3]), "the gradient",
          mistakes={"batch_mean": torch.tensor([23.0]), "per_step_scaled": torch.tensor([11.5])})
    unchanged(call, "w", "X", "Y")


def test_gd_fit_small(student):
    """X = [[1]], Y = [2], w0 = [0], lr = 0.1, 2 steps: the gradient 2 (w - 2) gives w = 0.4, then 0.72.
    X = [[1]]，Y = [2]，w0 = [0]，lr = 0.1，2 步：梯度 2 (w - 2)，w 依次为 0.4 和 0.72。"""
    X, Y, w0 = torch.tensor([[1.0]]), torch.tensor([2.0]), torch.tensor([0.0])
    call = student.call("gd_fit", X, Y, w0, 0.1, 2)
    # not zeroed: the second step uses -4 + 2 (0.4 - 2) = -7.2, so w = 0.4 + 0.72 = 1.12
    close(result_tensor(call, returned(call), "the fitted w", like=w0), torch.tensor([0.72]), "the fitted w",
          mistakes={"not_zeroed": torch.tensor([1.12])})
    unchanged(call, "X", "Y", "w0")


def test_grads_per_step_docstring(student):
    """The examples in grads_per_step's docstring give what they show (python -m doctest, on your code).
    grads_per_step 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "grads_per_step")


def test_accumulate_microbatches_docstring(student):
    """The examples in accumulate_microbatches's docstring give what they show (python -m doctest, on your code).
    accumulate_microbatches 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "accumulate_microbatches")


def test_gd_fit_docstring(student):
    """The examples in gd_fit's docstring give what they show (python -m doctest, on your code).
    gd_fit 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "gd_fit")


def test_grads_per_step_keeps_w_grad(student):
    """w arrives with a .grad of its own: it stays as it was (work on a leaf copy of w).
    w 传入时已有自己的 .grad：它必须保持不变（在 w 的叶子副本上计算）。"""
    w, xs = torch.tensor([1.0]), [torch.tensor([2.0]), torch.tensor([0.0])]
    call = student.call("grads_per_step", Arg(w, grad=torch.tensor([7.0])), xs)
    close(result_tensor(call, returned(call), "the stack of gradients", like=w, shape=(2, 1)),
          torch.tensor([[5.0], [3.0]]), "the stack of gradients",
          mistakes={"not_zeroed": torch.tensor([[5.0], [8.0]]), "recorded_alias": torch.zeros(2, 1)})
    unchanged(call, "w", "xs")


def test_accumulate_microbatches_float64(student):
    """The small example in float64: the gradient comes back in float64, w's dtype.
    float64 下的小例子：梯度也是 float64，与 w 的 dtype 相同。"""
    w, X, Y = (torch.tensor(v, dtype=torch.float64) for v in ([1.0], [[1.0], [2.0], [3.0]], [0.0, 0.0, 0.0]))
    call = student.call("accumulate_microbatches", w, X, Y, 2)
    # each micro-batch's own mean: 5 + 18 = 23; that sum divided by the 2 steps: 11.5
    close(result_tensor(call, returned(call), "the gradient", like=w), torch.tensor([28.0 / 3]), "the gradient",
          mistakes={"batch_mean": torch.tensor([23.0]), "per_step_scaled": torch.tensor([11.5])})


def test_gd_fit_returns_a_copy(student):
    """steps = 0 returns a copy of w0, never w0 itself.
    steps = 0 时返回 w0 的副本，而不是 w0 本身。"""
    X, Y, w0 = torch.tensor([[1.0]]), torch.tensor([2.0]), torch.tensor([0.5])
    call = student.call("gd_fit", X, Y, w0, 0.1, 0)
    got = result_tensor(call, returned(call), "the fitted w", like=w0)
    if got.same_as_arg is not None or got.shares_storage_with_arg is not None:
        raise Fail("the result is w0 itself (or shares its storage) / 返回的是 w0 本身（或共享存储）",
                   mistake="returned_argument")
    close(got, w0, "the fitted w")
