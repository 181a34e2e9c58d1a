"""Hidden tests for accumulation.py."""

import pytest
import torch

from . import oracle
from grader.cases.kit import Arg, Fail, close, draw, randint, result_tensor, returned, unchanged

DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])


@DTYPES
def test_grads_per_step_random(submission, rng, dtype):
    """Each step: backward, record a copy of w.grad, then w.grad.zero_(), so every row is that step's own
    gradient 2w + x + 1.
    每一步：backward，记录 w.grad 的副本，然后 w.grad.zero_()，因此每一行都是该步自己的梯度 2w + x + 1。"""
    shape = (randint(rng, 1, 3), randint(rng, 1, 3))
    w = draw(rng, shape, dtype)
    xs = [draw(rng, shape, dtype) for _ in range(randint(rng, 2, 5))]
    call = submission.call("grads_per_step", w, xs)
    want = oracle.step_grads(w, xs)
    got = result_tensor(call, returned(call), "the stack of gradients", like=w, shape=want.shape)
    close(got, want, "the stack of gradients",
          mistakes={"not_zeroed": want.cumsum(0), "recorded_alias": torch.zeros_like(want)})


def test_grads_per_step_empty(submission, rng):
    """An empty list xs gives a tensor of shape (0, *w.shape), with w's dtype and device.
    xs 为空列表时，返回形状为 (0, *w.shape) 的张量，dtype 和设备与 w 相同。"""
    w = draw(rng, (randint(rng, 1, 3), randint(rng, 2, 4)), torch.float64)
    call = submission.call("grads_per_step", w, [])
    result_tensor(call, returned(call, errors={"non-empty TensorList": "empty_xs"}), "the stack of gradients", like=w,
                  shape=(0, *w.shape))


def test_grads_per_step_conventions(submission, rng):
    """w and every x in xs are not modified (values, requires_grad, .grad, version).
    w 和 xs 中的每个 x 都不被修改（数值、requires_grad、.grad、版本号）。"""
    w = draw(rng, (3,), torch.float32)
    xs = [draw(rng, (3,), torch.float32) for _ in range(3)]
    call = submission.call("grads_per_step", Arg(w, grad=torch.ones(3)), xs)
    close(result_tensor(call, returned(call), "the stack of gradients", like=w, shape=(3, 3)), oracle.step_grads(w, xs),
          "the stack of gradients")
    unchanged(call, "w", "xs")


@pytest.mark.parametrize("batching", ["one_row", "divides", "remainder", "whole"])
@DTYPES
def test_accumulate_microbatches_random(submission, rng, dtype, batching):
    """Each micro-batch's loss is its squared errors summed and divided by the full N, so that the
    accumulated gradients add up to the full-batch mean's gradient; the last batch may be smaller.
    每个 micro-batch 的损失是其平方误差之和除以总样本数 N，这样累加的梯度正好等于全批次平均损失的梯度；最后一批可以更小。"""
    d = randint(rng, 1, 4)
    n, batch = {"one_row": (randint(rng, 2, 5), 1), "divides": (6, 3), "remainder": (7, 3),
                "whole": (randint(rng, 2, 5), 8)}[batching]
    w, X, Y = draw(rng, (d,), dtype), draw(rng, (n, d), dtype), draw(rng, (n,), dtype)
    call = submission.call("accumulate_microbatches", w, X, Y, batch)
    want = oracle.full_batch_grad(w, X, Y)
    mistakes = {"batch_mean": oracle.per_batch_mean_grad(w, X, Y, batch),
                "per_step_scaled": oracle.per_step_scaled_grad(w, X, Y, batch)}
    close(result_tensor(call, returned(call), "the gradient", like=w), want, "the gradient", mistakes=mistakes)


def test_accumulate_microbatches_conventions(submission, rng):
    """w, X and Y are not modified (values, requires_grad, .grad, version); the gradient is detached.
    w、X、Y 不被修改（数值、requires_grad、.grad、版本号）；梯度已 detach。"""
    w, X, Y = draw(rng, (2,), torch.float32), draw(rng, (5, 2), torch.float32), draw(rng, (5,), torch.float32)
    call = submission.call("accumulate_microbatches", Arg(w, grad=torch.ones(2)), X, Y, 2)
    close(result_tensor(call, returned(call), "the gradient", like=w), oracle.full_batch_grad(w, X, Y), "the gradient")
    unchanged(call, "w", "X", "Y")


@DTYPES
def test_gd_fit_random(submission, rng, dtype):
    """Each step: backward, then w -= lr * w.grad inside torch.no_grad(), then zero the gradient.
    每一步：backward，然后在 torch.no_grad() 中 w -= lr * w.grad，再把梯度清零。"""
    n, d = randint(rng, 3, 8), randint(rng, 1, 3)
    X, Y, w0 = draw(rng, (n, d), dtype), draw(rng, (n,), dtype), draw(rng, (d,), dtype)
    lr, steps = 0.05 * randint(rng, 1, 4), randint(rng, 3, 8)
    call = submission.call("gd_fit", X, Y, w0, lr, steps)
    close(result_tensor(call, returned(call), "the fitted w", like=w0), oracle.gd(X, Y, w0, lr, steps), "the fitted w",
          mistakes={"not_zeroed": oracle.gd(X, Y, w0, lr, steps, zero_grad=False)})


def test_gd_fit_zero_steps(submission, rng):
    """steps = 0 returns a copy of w0 (not w0 itself).
    steps = 0 时返回 w0 的副本（而不是 w0 本身）。"""
    X, Y, w0 = draw(rng, (4, 2)), draw(rng, (4,)), draw(rng, (2,))
    call = submission.call("gd_fit", X, Y, w0, 0.1, 0)
    got = result_tensor(call, returned(call), "the fitted w", like=w0)
    if got.same_as_arg is not None or got.shares_storage_with_arg is not None:
        raise Fail("the result is w0 itself (or shares its storage) / 返回的是 w0 本身（或共享存储）",
                   mistake="returned_argument")
    close(got, w0, "the fitted w")


def test_gd_fit_conventions(submission, rng):
    """X, Y and w0 are not modified (values, .grad, version): train a leaf copy of w0.
    X、Y、w0 不被修改（数值、.grad、版本号）：在 w0 的叶子副本上训练。"""
    X, Y, w0 = draw(rng, (5, 2), torch.float32), draw(rng, (5,), torch.float32), draw(rng, (2,), torch.float32)
    call = submission.call("gd_fit", X, Y, Arg(w0, grad=torch.ones(2)), 0.1, 3)
    close(result_tensor(call, returned(call), "the fitted w", like=w0), oracle.gd(X, Y, w0, 0.1, 3), "the fitted w")
    unchanged(call, "X", "Y", "w0")
