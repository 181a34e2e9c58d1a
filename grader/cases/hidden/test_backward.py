"""Hidden tests for backward.py."""

import pytest
import torch

from . import oracle
from grader.cases.kit import Arg, close, draw, randint, result_tensor, returned, unchanged

DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])


@DTYPES
def test_two_losses_grad_random(submission, rng, dtype):
    """g1 is a copy of w.grad taken after the first backward; the second backward (retain_graph=True on the
    first) accumulates into it, so g12 = dL1/dw + dL2/dw.
    g1 是第一次 backward 后 w.grad 的副本；第二次 backward（第一次需 retain_graph=True）在其上累加，g12 = dL1/dw + dL2/dw。"""
    shape = (randint(rng, 1, 4), randint(rng, 1, 4))
    w, x = draw(rng, shape, dtype), draw(rng, shape, dtype)
    call = submission.call("two_losses_grad", w, x)
    g1, g12 = returned(call, tuple, 2)
    d1, d2 = oracle.two_losses(w, x)
    close(result_tensor(call, g1, "g1", like=w), d1, "g1", mistakes={"aliased_grad": d1 + d2})
    close(result_tensor(call, g12, "g12", like=w), d1 + d2, "g12", mistakes={"not_accumulated": d2})


def test_two_losses_grad_conventions(submission, rng):
    """w and x are not modified, .grad included; g1 and g12 are detached float32 tensors like w.
    w 和 x 不被修改（包括 .grad）；g1、g12 是与 w 相同 dtype 的、已 detach 的张量。"""
    w, x = draw(rng, (3,), torch.float32), draw(rng, (3,), torch.float32)
    call = submission.call("two_losses_grad", Arg(w, grad=torch.ones(3)), x)
    d1, d2 = oracle.two_losses(w, x)
    for value, want, name in zip(returned(call, tuple, 2), (d1, d1 + d2), ("g1", "g12")):
        close(result_tensor(call, value, name, like=w), want, name)
    unchanged(call, "w", "x")


@DTYPES
def test_weighted_backward_random(submission, rng, dtype):
    """loss.backward(weights) (grad_tensors=weights) gives sum_i weights[i] * dloss[i]/dw: not the plain sum.
    loss.backward(weights)（grad_tensors=weights）得到 sum_i weights[i] * dloss[i]/dw，而不是简单求和。"""
    n = randint(rng, 2, 6)  # n >= 2: with one element, a loss that interleaves y0 and y1 equals the cat
    w, x, weights = draw(rng, (n,), dtype), draw(rng, (n,), dtype), draw(rng, (2 * n,), dtype, -2, 2)
    call = submission.call("weighted_backward", w, x, weights)
    want = oracle.weighted(w, x, weights)
    close(result_tensor(call, returned(call), "the gradient", like=w), want, "the gradient",
          mistakes={"unweighted": oracle.weighted(w, x, torch.ones_like(weights)),
                    "interleaved": oracle.weighted(w, x, torch.cat([weights[0::2], weights[1::2]]))})


def test_weighted_backward_conventions(submission, rng):
    """w, x and weights are not modified; the gradient is detached, with w's dtype.
    w、x、weights 不被修改；返回的梯度已 detach，dtype 与 w 相同。"""
    n = 4
    w, x, weights = draw(rng, (n,), torch.float32), draw(rng, (n,), torch.float32), draw(rng, (2 * n,), torch.float32)
    call = submission.call("weighted_backward", Arg(w, grad=torch.zeros(n)), x, weights)
    close(result_tensor(call, returned(call), "the gradient", like=w), oracle.weighted(w, x, weights), "the gradient")
    unchanged(call, "w", "x", "weights")
