"""What an engine is asked to do (`Options`) and the device it runs on. Light on purpose: `grader check`
builds its options and forks its zygote before pytest is imported (docs/engine.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from grader.errors import GraderError
from grader.protocol.limits import Limits


@dataclass
class Options:
    device: str = "cpu"
    seed: int = 0
    folders: tuple[str, ...] = ("public", "hidden")
    exercises: set[str] | None = None
    limits: Limits = field(default_factory=Limits)
    extra_hidden: list[str] = field(default_factory=list)
    sandbox: str | None = None  # None: the strongest isolation this machine allows; "process": no namespaces
    course: str | None = None  # the course file (None: the package's own course, grader/cases/course.yaml)
    show_output: bool = False  # `grader check`: each public test carries what the student's code printed and warned
    # `grader check`: the zygote forked from this process, which imported torch already (public tests only)
    fork_zygote: bool = False
    counterexamples: bool = True  # False (--no-counterexamples): no search, none in the score files
    properties: bool = False  # `grader check`: each exercise's property runs on fresh inputs (seed: `seed`)


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise GraderError("--device cuda: no CUDA GPU is available to this torch "
                          f"({torch.__version__}); use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        raise GraderError(f"unknown device {device!r}: use cpu, cuda or auto")
    return device
