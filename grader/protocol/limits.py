"""What a worker may use (`Limits`) and how this machine isolates it (`SandboxPlan`).

Both sides read these: the engine sets the limits and enforces the time and memory ones from
outside; the zygote applies the rest (rlimits, namespaces, a private root) inside the sandbox,
decides the plan once and sends it back as JSON. Plain dataclasses, no behaviour: how a plan
reads in a score file is the engine's business (`grader.host.launcher.describe_sandbox`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Limits:
    """What a worker may use. Times in seconds, sizes in MiB."""

    call_timeout_s: float = 10.0
    exercise_budget_s: float = 20.0
    submission_budget_s: float = 240.0
    memory_mb: int = 2048  # address space above what the worker starts with (CPU only)
    processes: int = 64  # RLIMIT_NPROC of the worker's own user id
    output_kb: int = 64  # captured stdout/stderr kept per submission
    file_size_mb: int = 16
    tmpfs_mb: int = 64
    open_files: int = 256
    cpu_s: int = 600
    gpu_memory_fraction: float = 0.25
    # One worker per module instead of one per submission (CPU only): what a module does to its
    # interpreter can then touch nothing else, at the cost of five more worker starts per
    # submission. Without it, torch's namespaces are restored before every import and call.
    worker_per_module: bool = False


NAMESPACE_MODES = ("root-namespaces", "user-namespaces")  # a worker in namespaces of its own: PID, mount, network, IPC


@dataclass
class SandboxPlan:
    """How workers are isolated on this machine; decided once by the zygote."""

    mode: str = "process"  # "root-namespaces", "user-namespaces", "process", or "spawn" (no fork)
    root_dir: str = ""  # empty mount point for the worker's new root
    readonly_paths: list[str] = field(default_factory=list)
    hidden_paths: list[str] = field(default_factory=list)
    worker_uid: int | None = None
    worker_gid: int | None = None
    worker_groups: list[int] = field(default_factory=list)  # supplementary groups (the process sandbox as root)
    device: str = "cpu"
    # The process sandbox only: what Landlock and seccomp confine the worker by on this kernel
    # ("files", "signals", "network"; see grader.sandboxed.confine).
    confined: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)
