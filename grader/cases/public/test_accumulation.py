"""Public tests for accumulation.py."""

import torch

from grader.cases.kit import close, result_tensor, returned, unchanged


def test_grads_per_step_lecture(submission):
    """w = 1 and xs = [2, 3]: y = (w + x) * (w + 1) has dy/dw = 2w + x + 1, so 5 then 6, because the
    gradient is zeroed after each step (w.grad.zero_()).
    w = 1，xs = [2, 3]：dy/dw = 2w + x + 1，依次为 5 和 6，因为每一步之后都清零了梯度（w.grad.zero_()）。"""
    w, xs = torch.tensor([1.0]), [torch.tensor([2.0]), torch.tensor([3.0])]
    call = submission.call("grads_per_step", w, xs)
    close(result_tensor(call, returned(call), "the stacked gradients", like=w, shape=(2, 1)),
          torch.tensor([[5.0], [6.0]]), "the stacked gradients")
    unchanged(call, "w", "xs")


def test_accumulate_microbatches_small(submission):
    """X = [[1], [2], [3]], Y = 0, w = [1], batch_size 2: the full-batch gradient 2/N X^T (X w - Y) = 28/3,
    made of a 2-row and a 1-row micro-batch, each loss divided by N = 3 (not by its own size).
    X = [[1], [2], [3]]，Y = 0，w = [1]，batch_size 为 2：全批次梯度 2/N X^T (X w - Y) = 28/3，
    由 2 行和 1 行两个 micro-batch 累加而成，每个损失都除以 N = 3（而不是它自己的行数）。"""
    w, X, Y = torch.tensor([1.0]), torch.tensor([[1.0], [2.0], [3.0]]), torch.zeros(3)
    call = submission.call("accumulate_microbatches", w, X, Y, 2)
    close(result_tensor(call, returned(call), "the gradient", like=w), torch.tensor([28.0 / 3]), "the gradient")
    unchanged(call, "w", "X", "Y")


def test_gd_fit_small(submission):
    """X = [[1]], Y = [2], w0 = [0], lr = 0.1, 2 steps: the gradient 2 (w - 2) gives w = 0.4, then 0.72.
    X = [[1]]，Y = [2]，w0 = [0]，lr = 0.1，2 步：梯度 2 (w - 2)，w 依次为 0.4 和 0.72。"""
    X, Y, w0 = torch.tensor([[1.0]]), torch.tensor([2.0]), torch.tensor([0.0])
    call = submission.call("gd_fit", X, Y, w0, 0.1, 2)
    close(result_tensor(call, returned(call), "the fitted w", like=w0), torch.tensor([0.72]), "the fitted w")
    unchanged(call, "X", "Y", "w0")
