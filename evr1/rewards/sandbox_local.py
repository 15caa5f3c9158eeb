"""Local runner processes: in a bubblewrap sandbox, or (only when asked) as a plain child process.

`Process` is one started runner with capped line I/O and a `kill` after which nothing it started is left;
`Deadline` kills every process registered with it when a sample's wall time is up. `Bubblewrap` builds the
sandbox: new user (but for host root without a cgroup, see `Bubblewrap`), PID, network, IPC, UTS and mount
namespaces (no further user namespaces inside, no capabilities, a new session), a read-only root holding
read-only binds of /usr (and the /bin, /lib, /lib64 links) and of the Python installation only, a fresh /proc
of its PID namespace, a minimal read-only /dev, a size-capped tmpfs as its only writable folder, a cleared
environment, and `--die-with-parent`. A sandbox ends by SIGKILL to its PID 1 (through a pidfd taken from
bwrap's `--info-fd`), which takes every process in it along before bwrap exits.
Its limits are per sandbox through a cgroup where the machine allows creating one (`sandbox_cgroups`), plus
the runner's rlimits (memory, CPU, file size and RLIMIT_NPROC, which counts processes per user namespace,
so per sandbox, but never binds root: as host root without a cgroup each sandbox runs as a uid of its own,
see `Bubblewrap`). `Unsandboxed` runs the same runner as a plain child in a temp folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from evr1.rewards.sandbox_cgroups import Cgroups
from evr1.rewards.sandbox_uids import UidSlot, UidSlots, userns_filter

WORKDIR = "/sandbox"
BECOME = (Path(__file__).parent / "sandbox_become.py").read_text()
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # for bwrap and the tests' process: none of the caller's


def python_binary() -> str:
    """The real interpreter behind this one (a venv's `python` is a link to it); the runner needs only its stdlib."""
    return os.path.realpath(sys.executable)


class Deadline:
    """A wall-clock limit for one sample: at expiry every registered process is killed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._processes: list[Process] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def register(self, process: Process) -> None:
        with self._lock:
            if self.expired:
                process.kill()
            self._processes.append(process)

    def remaining(self) -> float:
        return 0.0 if self.expired else max(0.0, self.ends - time.monotonic())

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            processes = list(self._processes)
        for process in processes:
            process.kill()

    def close(self) -> None:
        """Stop the timer and kill what is still running."""
        self._timer.cancel()
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            process.kill()


class Process:
    """A runner process: write lines to it, read capped lines or output from it, kill it and all it started."""

    def __init__(self, argv: list[str], deadline: Deadline, *, cwd: str | None = None, info: bool = False,
                 cgroups: list[Path] | None = None, folder: str | None = None, slot: UidSlot | None = None,
                 fds: tuple[int, ...] = ()) -> None:  # fmt: skip
        self.reason: str | None = None
        self._folder, self._slot = folder, slot
        self._pidfd: int | None = None
        self._cgroups = cgroups or []
        self._lock = threading.Lock()
        self._dead = False
        read_info, write_info = os.pipe() if info else (None, None)
        if info:
            argv = [argv[0], "--info-fd", str(write_info), *argv[1:]]
        if self._cgroups:  # join the cgroups before bwrap starts, so that everything it starts is counted
            joins = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(self._cgroups)))
            argv = ["/bin/sh", "-c", f'{joins} && shift {len(self._cgroups)} && exec "$@"', "sh",
                    *(str(d / "cgroup.procs") for d in self._cgroups), *argv]  # fmt: skip
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         cwd=cwd, env=ENV, start_new_session=True,
                                         pass_fds=(*fds, write_info) if info else fds)  # fmt: skip
        except BaseException:
            for group in self._cgroups:  # nothing started: the cgroups (and the uid) are ours to release
                Cgroups.remove(group)
            if slot is not None:
                slot.release()
            if info:
                os.close(read_info)
            raise
        finally:
            if info:
                os.close(write_info)
        deadline.register(self)  # before waiting for bwrap's set-up, which the deadline may have to cut short
        if info:
            with os.fdopen(read_info, "rb") as f:
                text = f.read(4096)
            try:
                pidfd = os.pidfd_open(int(json.loads(text)["child-pid"]))
            except (ValueError, KeyError, OSError):
                return  # bwrap failed (or its sandbox already ended): nothing but bwrap to kill
            with self._lock:
                if self._dead:  # killed meanwhile, through bwrap (its --die-with-parent takes the sandbox along)
                    os.close(pidfd)
                else:
                    self._pidfd = pidfd

    def send(self, line: bytes) -> bool:
        """Write a line; False when the process no longer reads."""
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def end_input(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def readline(self, cap: int) -> bytes:
        """The next line, or b"" at the end or when the line is over `cap` bytes (then the process is killed)."""
        line = self.proc.stdout.readline(cap + 1)
        if line.endswith(b"\n"):
            return line
        if len(line) > cap:
            self.reason = f"wrote a line over {cap >> 20} MB"
            self.kill()
        return b""

    def output(self, cap: int) -> bytes:
        """All the process writes until it ends, or b"" after more than `cap` bytes (then it is killed)."""
        chunks, size = [], 0
        while chunk := self.proc.stdout.read1(1 << 16):
            size += len(chunk)
            if size > cap:
                self.reason = f"printed over {cap >> 20} MB"
                self.kill()
                return b""
            chunks.append(chunk)
        return b"".join(chunks)

    def wait(self) -> int:
        return self.proc.wait()

    def close(self) -> None:
        """`kill`, then close the pipes (by the thread that reads them, never the deadline's)."""
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def kill(self) -> None:
        """SIGKILL the sandbox's PID 1 (all its processes die with it) or the process group, then reap bwrap."""
        with self._lock:
            if self._dead:
                return
            self._dead = True
            if self._pidfd is not None:
                try:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                except OSError:
                    pass
            else:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self._pidfd is not None:
                os.close(self._pidfd)
            for group in self._cgroups:
                Cgroups.remove(group)
            if self._slot is not None:  # every process of the sandbox is reaped: its uid runs nothing
                self._slot.release()
            if self._folder:
                shutil.rmtree(self._folder, ignore_errors=True)


def _binds() -> list[str]:
    """bwrap arguments for the read-only system and interpreter folders the runner needs, nothing else (the
    folders above the interpreter's made 0755: bwrap would make them 0700, closed to a sandbox's own uid)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    prefix = os.path.realpath(sys.base_prefix)
    if not (prefix + "/").startswith("/usr/"):
        for parent in reversed(Path(prefix).parents[:-1]):
            args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", prefix, prefix]
    return args


class Bubblewrap:
    """Runner processes in bubblewrap sandboxes (see the module docstring).

    Three modes, by who runs it and what limits processes: a user, in a user namespace of the sandbox
    (RLIMIT_NPROC counts per user namespace); host root with a cgroup, in a user namespace with no capabilities
    (the pids cgroup counts, since RLIMIT_NPROC exempts root); host root without a cgroup (`own_uid`), in no
    user namespace: bwrap keeps only CAP_SETUID and CAP_SETGID, and the program's first statements
    (`sandbox_become`) switch to a uid of its own from `uid_base` (`sandbox_uids`), losing them, and set
    RLIMIT_NPROC, which then binds; new user namespaces are refused by a seccomp filter (`userns_filter`).
    """

    name = "bubblewrap"

    def __init__(self, memory_mb: int, processes: int, file_mb: int, *, uid_base: int) -> None:
        self.bwrap = shutil.which("bwrap")
        self.memory_mb, self.processes, self.file_mb = memory_mb, processes, file_mb
        self.cgroups = Cgroups.find()
        self.uids = UidSlots(uid_base)
        self.userns_filter = userns_filter(os.uname().machine)

    @property
    def own_uid(self) -> bool:
        """Whether each sandbox runs as a uid of its own (host root, no cgroup, a machine `userns_filter` knows)."""
        return self.cgroups is None and os.geteuid() == 0 and self.userns_filter is not None

    @property
    def limits(self) -> str:
        """Which limits are in force, in words."""
        if self.cgroups is not None:
            return f"{self.cgroups.name} (memory, processes per sandbox) + rlimits"
        if self.own_uid:
            return (f"per-sandbox uid (from {self.uids.base}) + RLIMIT_NPROC (processes per sandbox; no cgroup could be"
                    " created) + rlimits (memory per process)")  # fmt: skip
        if os.geteuid() == 0:
            return "rlimits only: no cgroup could be created, and RLIMIT_NPROC does not bind host root"
        return "rlimits + RLIMIT_NPROC (processes per sandbox user namespace)"

    def nproc_limit(self) -> int | None:
        return self.processes

    def argv(self, seccomp: int | None = None) -> list[str]:
        """bwrap's command line up to the program's `-c`; with `seccomp` (a descriptor to read `userns_filter`
        from), that of a sandbox of its own uid (host root without a cgroup)."""
        assert self.bwrap is not None
        if seccomp is None:
            users = ["--unshare-user", "--disable-userns", *(["--cap-drop", "ALL"] if os.geteuid() == 0 else [])]
            work = []
        else:  # the tmpfs is root's: open to the sandbox's uid (nothing else runs in it but bwrap's PID 1)
            users = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                     "--seccomp", str(seccomp)]  # fmt: skip
            work = ["--perms", "0777"]
        return [self.bwrap, *users, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv", *_binds(),
                "--proc", "/proc", "--dev", "/dev", *work, "--size", str(self.file_mb << 20), "--tmpfs", WORKDIR,
                "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKDIR, "--setenv", "PATH", "/usr/bin:/bin",
                "--setenv", "HOME", WORKDIR, "--setenv", "TMPDIR", WORKDIR, "--setenv", "LANG", "C.UTF-8",
                "--", python_binary(), "-I", "-S", "-c"]  # fmt: skip

    def start(self, source: str, deadline: Deadline) -> Process:
        if self.bwrap is None:
            raise FileNotFoundError("bwrap is not installed")
        if self.own_uid:
            return self._start_as_own_uid(source, deadline)
        folders = self.cgroups.create(self.memory_mb + self.file_mb, self.processes + 2) if self.cgroups else []
        return Process([*self.argv(), source], deadline, info=True, cgroups=folders)

    def _start_as_own_uid(self, source: str, deadline: Deadline) -> Process:
        assert self.userns_filter is not None
        slot = self.uids.take()
        try:
            seccomp, write = os.pipe()
            os.write(write, self.userns_filter)  # far below a pipe's buffer
            os.close(write)
        except OSError:
            slot.release()
            raise
        try:
            source = f"{BECOME}\n_become({slot.uid}, {self.processes})\ndel _become\n{source}"
            return Process([*self.argv(seccomp), source], deadline, info=True, slot=slot, fds=(seccomp,))
        finally:
            os.close(seccomp)


class Unsandboxed:
    """Runner processes as plain children in a temp folder: no isolation but the runner's rlimits."""

    name = "unsandboxed"
    limits = "per-process rlimits (no process-count limit: RLIMIT_NPROC would count the whole user)"

    def nproc_limit(self) -> int | None:
        return None

    def start(self, source: str, deadline: Deadline) -> Process:
        folder = tempfile.mkdtemp(prefix="evr1-code-")
        return Process([python_binary(), "-I", "-S", "-c", source], deadline, cwd=folder, folder=folder)
