"""The first statements of every program a sandbox runs as host root without a cgroup (`sandbox_local`).

The program starts as root holding only CAP_SETUID and CAP_SETGID (bwrap's `--cap-add`, in no user namespace).
Before anything else runs it becomes its sandbox's own uid and gid with no supplementary groups, which leaves
it no capability (the inheritable ones it clears with capset), checks so (exit status 70 otherwise), and caps
the processes of that uid (RLIMIT_NPROC, which binds every uid but root). Stdlib only; `sandbox_local` appends
the call `_become(UID, PROCESSES)` and then the program.
"""

import ctypes
import os
import resource


def _become(uid, processes):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    header, sets = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()  # v3, this process; all empty
    if ctypes.CDLL(None, use_errno=True).capset(header, sets):
        os._exit(70)
    with open("/proc/self/status") as f:
        caps = [line.split()[1] for line in f if line.startswith(("CapInh:", "CapPrm:", "CapEff:", "CapAmb:"))]
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (uid,) * 3 or os.getgroups() or {*caps} != {"0" * 16}:
        os._exit(70)
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
