"""Counts the first doubling b = a * 2 as a loop step, so steps is one too many."""
EXERCISE = "dynamic_doubling"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "dynamic_doubling.steps_off_by_one"


def dynamic_doubling(a):
    a = a.detach().clone().requires_grad_(True)
    b = a * 2
    steps = 1
    while b.norm() < 1000:
        b = b * 2
        steps += 1
    c = b if b.sum() > 0 else 100 * b
    c.sum().backward()
    return c.detach(), a.grad, steps
