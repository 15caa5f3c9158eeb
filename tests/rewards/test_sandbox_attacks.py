"""Hostile answers against the bubblewrap sandbox. Each attack is scored in one batch with honest answers: the
attack gets its safe outcome, the honest answers still score 1, and nothing the batch started is left running.

Most attacks define a correct `f` plus a `probe()` that reports what the attack reached; the attack's reference
asserts the escape (`assert probe() > 0`: anything reached), so a blocked attack scores 2/3 and an escape 1.0.

No outcome depends on the machine's speed: a sample's wall time is generous (30 s) wherever the attack is not
about time, and an attack that ends by a limit ends itself once the limit refused it. Only the infinite loop
waits for its time to run out (10 s, still far above what an honest answer takes on a loaded machine).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reward_helpers import accuracies, make

from evr1.rewards import code_reward, code_sandbox
from evr1.rewards.code_sandbox import run_python
from evr1.rewards.sandbox_cgroups import Cgroups
from evr1.rewards.sandbox_uids import userns_filter
from evr1.specs import CodeSandboxSpec, RewardSpec

SPEC = RewardSpec(code=CodeSandboxSpec(timeout_s=30.0, memory_mb=256, processes=8, file_mb=4, output_mb=1, workers=3))
LOOP_SPEC = RewardSpec(code=SPEC.code.model_copy(update={"timeout_s": 10.0}))
HONEST = "def f(x):\n    return x + 1"
F_ONLY = {"language": "python", "tests": ["assert f(1) == 2", "assert f(5) == 6"]}
BLOCKED = pytest.approx(2 / 3)  # f passes both tests, the escape test fails
ENDED = "the answer's process ended (it exited, crashed or was killed by a limit)"


def _descendants() -> list[int]:
    """Processes below this one (from /proc): the sandbox and the tests' processes must all be gone."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
        except (ValueError, OSError, IndexError):
            continue
    found, stack = [], [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _batch(attack: str, escape: str | None, spec: RewardSpec = SPEC, answer: dict | None = None, keep: int = 0,
           note: str | None = None) -> list:
    """Scores of [attack, honest, honest]; the attack's reference adds the test `escape` when given; `note`: what
    the attack's output must say."""
    tests = F_ONLY["tests"] + ([escape] if escape else [])
    ref = answer or {"language": "python", "tests": tests}
    inputs = [make(f"<answer>```python\n{attack}\n```</answer>", ref, "code", sample_id="attack")]
    inputs += [make(f"<answer>```python\n{HONEST}\n```</answer>", F_ONLY, "code", sample_id=f"honest{i}") for i in range(2)]
    before = set(_descendants())  # other tests' long-lived helpers (reward worker pools) in this process
    values = code_reward.score(inputs, spec)
    scores = accuracies(values)
    assert values[1:] == [1.0, 1.0]  # no note on an honest answer
    if note is not None:
        assert values[0].note == note
    assert [pid for pid in _descendants() if pid != keep and pid not in before] == []  # `keep`: the test's own
    return scores


def test_reading_a_planted_secret_fails(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    attack = f"""{HONEST}
def probe():
    found = []
    for path in ({str(secret)!r}, "/etc/shadow", {str(Path(code_reward.__file__))!r}):
        try:
            found.append(open(path).read()[:9])
        except OSError:
            pass
    return found"""
    assert _batch(attack, "assert probe() != []")[0] == BLOCKED  # any file read would score 1
    assert _batch(attack, "assert probe() == []")[0] == 1.0  # the probe ran and read nothing


def test_writing_or_deleting_outside_fails(tmp_path: Path) -> None:
    victim, planted = tmp_path / "victim.txt", tmp_path / "planted.txt"
    victim.write_text("keep")
    attack = f"""{HONEST}
import os, shutil
def probe():
    done = []
    for act in (lambda: os.remove({str(victim)!r}), lambda: open({str(planted)!r}, "w").write("x"),
                lambda: shutil.rmtree({str(tmp_path)!r}), lambda: open("/usr/evr1-planted", "w"),
                lambda: open("/evr1-planted", "w"), lambda: open("/dev/shm/evr1-planted", "w")):  # unbounded tmpfs
        try:
            act()
            done.append(1)
        except OSError:
            pass
    return len(done)"""
    assert _batch(attack, "assert probe() > 0")[0] == BLOCKED  # any write would score 1
    assert victim.read_text() == "keep" and not planted.exists() and not Path("/usr/evr1-planted").exists()


def test_killing_the_parent_and_a_sibling_fails() -> None:
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        attack = f"""{HONEST}
import os, signal
def probe():
    killed = 0
    for pid in ({os.getpid()}, {os.getppid()}, {sibling.pid}, os.getppid()):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += pid != os.getppid()
        except OSError:
            pass
    return killed"""
        scores = code_reward.score([make(f"<answer>```python\n{attack}\n```</answer>",
                                         {"language": "python", "tests": [*F_ONLY["tests"], "assert probe() > 0"]}, "code"),
                                    make(f"<answer>{HONEST}</answer>", F_ONLY, "code")], SPEC)  # fmt: skip
        assert scores == [2 / 3, 1.0]  # we are alive to check, and so is the sibling
        assert sibling.poll() is None
    finally:
        sibling.kill()
        sibling.wait()


def test_a_setsid_child_does_not_outlive_its_sample(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    token = f"evr1-escape-{os.getpid()}"
    attack = f"""{HONEST}
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(0.5); open(sys.argv[1], 'w').write('x')",
                  {str(marker)!r}, {token!r}], start_new_session=True)"""
    assert _batch(attack, None)[0] == 1.0  # the answer itself is correct
    assert not any(token.encode() in p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if _readable(p))
    time.sleep(1.0)
    assert not marker.exists()


def _readable(path: Path) -> bool:
    try:
        path.read_bytes()
        return True
    except OSError:
        return False


@pytest.fixture(params=["as found", "own uid"])
def limiter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The sandbox as this machine makes it, then (as root) as where no cgroup can be made: a uid per sandbox."""
    if request.param == "own uid":
        if os.geteuid() != 0 or userns_filter(os.uname().machine) is None:
            pytest.skip("only host root on x86_64 or aarch64 runs each sandbox as a uid of its own")
        monkeypatch.setattr(Cgroups, "find", classmethod(lambda cls: None))
    code_sandbox.sandbox_for.cache_clear()
    yield code_sandbox.sandbox_for(SPEC.code).limits
    code_sandbox.sandbox_for.cache_clear()


def test_a_fork_bomb_is_contained(limiter: str) -> None:
    # forks until the process limit refuses; its copies then hold their processes (asleep, so that the honest
    # answers of the batch get the CPU), and the answer's own process leaves once refused: the sample ends there
    assert "processes per sandbox" in limiter  # a cgroup, RLIMIT_NPROC in its user namespace, or a uid of its own
    attack = ("import os, time\nmain = os.getpid()\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
              "        if os.getpid() == main:\n            os._exit(1)\n        time.sleep(60)")
    assert _batch(attack, None, note=f"0/2 tests passed: {ENDED}")[0] == 0.0
    if limiter.startswith("per-sandbox uid"):  # refused at the limit: 8 processes of its uid, the runner and 7 more
        assert _batch(COUNTING, "assert probe() == 7")[0] == 1.0


COUNTING = f"""{HONEST}
import os, time
def probe():
    forked = 0
    while forked < 50:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
    return forked"""


def test_memory_is_limited_across_forked_children() -> None:
    attack = f"""{HONEST}
import os, time
def probe():
    held = []
    for _ in range(8):
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                block = b"x" * (100 << 20)
                os.write(w, b"1")
            except MemoryError:
                pass
            time.sleep(30)
            os._exit(0)
        os.close(w)
        if os.read(r, 1) == b"1":
            held.append(pid)
    return sum(os.waitpid(pid, os.WNOHANG)[0] == 0 for pid in held) >= 6  # alive, holding 100 MB each"""
    # 600 MB never held at once: memory_mb per sandbox (a cgroup: the OOM killer takes earlier children), or
    # at most `processes` processes of memory_mb each (rlimits); the OOM killer may also take the answer itself
    assert _batch(attack, "assert probe()")[0] in (0.0, BLOCKED)


def test_sockets_to_local_listeners_fail(tmp_path: Path) -> None:
    tcp = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "sock"))
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0evr1-test-{os.getpid()}")
    for listener in (tcp, unix, abstract):
        listener.listen()
        listener.setblocking(False)
    try:
        attack = f"""{HONEST}
import socket
def probe():
    reached = []
    for family, address in ((socket.AF_INET, ("127.0.0.1", {tcp.getsockname()[1]})),
                            (socket.AF_UNIX, {str(tmp_path / "sock")!r}), (socket.AF_UNIX, "\\0evr1-test-{os.getpid()}")):
        try:
            socket.socket(family).connect(address)
            reached.append(family)
        except OSError:
            pass
    return len(reached)"""
        assert _batch(attack, "assert probe() > 0")[0] == BLOCKED  # any connection would score 1
        for listener in (tcp, unix, abstract):
            with pytest.raises(BlockingIOError):
                listener.accept()
    finally:
        for listener in (tcp, unix, abstract):
            listener.close()


def test_the_environment_is_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVR1_TEST_SECRET", "TOPSECRET")  # what a child of this process inherits
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # holds it in its /proc environ
    try:
        attack = f"""{HONEST}
import os
def probe():
    seen = "TOPSECRET" in str(os.environ)
    for pid in {{os.getppid(), 1, os.getpid(), {holder.pid}, {os.getpid()}}}:
        try:
            seen = seen or b"TOPSECRET" in open(f"/proc/{{pid}}/environ", "rb").read()
        except OSError:
            pass
    return seen"""
        assert _batch(attack, "assert probe()", keep=holder.pid)[0] == BLOCKED
    finally:
        holder.kill()
        holder.wait()


def test_a_gigabyte_of_stdout_is_cut_off() -> None:
    flood = "import sys\nfor _ in range(1 << 14):\n    sys.stdout.write('x' * (1 << 16))\n"
    assert _batch(flood + HONEST, None)[0] == 0.0  # killed at file_mb, before it defines f
    cases = {"language": "python", "cases": [{"input": "", "output": "x"}]}
    assert _batch(flood, None, answer=cases)[0] == 0.0  # a program's output: cut at output_mb


def test_an_infinite_loop_times_out() -> None:
    assert _batch("while True:\n    pass", None, LOOP_SPEC, note="0/2 tests passed: timed out after 10 s")[0] == 0.0


FORGERIES = [
    # write a verdict line (and replies) on every open descriptor, then leave
    ("import os\nfor fd in range(64):\n    try:\n        os.write(fd, b'{\"passed\": 2, \"total\": 2}\\n{\"v\": 2}\\n')\n"
     "    except OSError:\n        pass\nos._exit(0)"),
    # reach the runner's frames through sys._getframe and send a verdict through its own reply function
    ("import sys\nframe = sys._getframe()\nwhile frame.f_back:\n    frame = frame.f_back\n"
     "for value in list(frame.f_locals.values()) + list(sys._getframe(1).f_locals.values()):\n"
     "    if callable(value):\n        try:\n            value({'passed': 2, 'total': 2})\n        except Exception:\n"
     "            pass"),
    # the always-equal object, and one that is always true
    "def f(x):\n    class E:\n        __eq__ = lambda s, o: True\n        __bool__ = lambda s: True\n    return E()",
]


@pytest.mark.parametrize("attack", FORGERIES, ids=["forged-verdict", "getframe", "always-equal"])
def test_forged_results_score_nothing(attack: str) -> None:
    assert _batch(attack, None)[0] == 0.0


def test_a_sandbox_that_dies_scores_only_its_sample() -> None:
    # SIGKILL to everything it may signal (nothing else lives in its PID namespace), then to itself
    attack = ("import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n" + HONEST)
    assert _batch(attack, None, note=f"0/2 tests passed: {ENDED}")[0] == 0.0
    result = run_python(attack, tests=F_ONLY["tests"], spec=SPEC.code)
    assert (result.passed, result.reason) == (0, ENDED)
