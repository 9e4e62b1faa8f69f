"""Hostile submissions: each case is a kernel (or reference) that tries one thing it must not.

A case's source marks the lines of its attempt with `# <-`; the suite checks that an evidence item
sits on one of them. `{sentinel}`, `{secret_file}`, `{repo}`, `{grader_pid}` and `{port}` are
filled in by the suite: the sentinel tree lives outside every job folder and must come out
unchanged; the secret file and the grader's environment hold tokens that must never reach a draft.
"""

from __future__ import annotations

from dataclasses import dataclass

KERNEL = """import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
{imports}

@nki.jit{def_mark}
def kernel(a):{def_mark}
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
{body}
    nl.store(out, value=nl.add(t, 1.0))
    return out
"""
REFERENCE = """import numpy as np
{imports}


def ref(a):{def_mark}
{body}
    return a + 1.0
"""
CLEAN_KERNEL = KERNEL.format(imports="", def_mark="", body="")
CLEAN_REFERENCE = REFERENCE.format(imports="", def_mark="", body="")
MARK = "# <-"


@dataclass(frozen=True)
class Case:
    id: str
    body: str  # indented by 4 spaces; attempt lines end with MARK
    imports: str = ""
    side: str = "kernel"  # or "reference"
    mark_def: bool = False  # run-time evidence without a line of its own sits on the definition (decorator, def)
    policy_kinds: tuple[str, ...] = ()  # with the import policy: an item of one of these kinds on a marked line
    runtime_kinds: tuple[str, ...] = ()  # without it (the sandbox alone): likewise

    def files(self, **values) -> dict[str, str]:
        template = KERNEL if self.side == "kernel" else REFERENCE
        source = template.format(imports=self.imports, def_mark=f"  {MARK}" if self.mark_def else "",
                                 body=self.body).format(**values)
        if self.side == "kernel":
            return {"kernel.py": source, "reference.py": CLEAN_REFERENCE}
        return {"kernel.py": CLEAN_KERNEL, "reference.py": source}

    def marked_lines(self, **values) -> dict[str, set[int]]:
        out = {}
        for name, text in self.files(**values).items():
            lines = {i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(MARK)}
            if lines:
                out[name] = lines
        return out


REFUSED = ("sim.refused", "security.system_access", "security.escape")
TIMEOUT = ("sim.incomplete",)
ANY_RUNTIME = ("security.system_access", "security.escape", "sim.error", "sim.incomplete", "sim.reference_error")

CASES = [
    # --- processes and the shell ---------------------------------------------------------------
    Case("os_system", '    os.system("touch {sentinel}/pwned")  # <-', "import os", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("subprocess_run", '    subprocess.run(["sh", "-c", "echo pwned > {sentinel}/pwned"])  # <-',
         "import subprocess", policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("subprocess_shell_passwd", '    subprocess.Popen("cat /etc/passwd > {sentinel}/passwd", shell=True).wait()  # <-',
         "import subprocess", policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("fork_bomb", "    while True:  # <-\n        os.fork()  # <-", "import os", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("sleepers_left_behind", '    procs = [subprocess.Popen(["sleep", "600"]) for _ in range(200)]  # <-',
         "import subprocess", policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("daemonised_child", "    if os.fork() == 0:  # <-\n        os.setsid()\n        time.sleep(600)  # <-",
         "import os, time", policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("thread_outlives_kernel", "    threading.Thread(target=time.sleep, args=(600,)).start()  # <-",
         "import threading, time", mark_def=True, policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    # --- network ---------------------------------------------------------------------------------
    Case("socket_connect", '    socket.create_connection(("1.1.1.1", 80), timeout=2)  # <-', "import socket",
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("socket_listen", "    s = socket.socket()  # <-\n    s.bind(('0.0.0.0', {port}))  # <-\n    s.listen()  # <-",
         "import socket", policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    # --- files and the grader's environment ------------------------------------------------------
    Case("read_etc_passwd", '    raise ValueError(open("/etc/passwd").read())  # <-', policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("read_grader_environment", "    raise ValueError(repr(dict(os.environ)))  # <-", "import os",
         policy_kinds=REFUSED, runtime_kinds=ANY_RUNTIME),
    Case("read_grader_proc_environ", '    raise ValueError(open("/proc/{grader_pid}/environ").read())  # <-',
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("read_secret_outside_job", '    raise ValueError(open("{secret_file}").read())  # <-', policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("read_grader_checkout", '    raise ValueError(open("{repo}/pyproject.toml").read())  # <-',
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("write_outside_job", '    os.makedirs("{sentinel}", exist_ok=True)  # <-\n'
         '    open("{sentinel}/new.txt", "w").write("pwned")  # <-', "import os", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("delete_outside_job", '    shutil.rmtree("{sentinel}")  # <-', "import shutil", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("write_into_the_python_install", '    open(np.__file__, "a").write("pwned")  # <-', policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    # --- the interpreter's internals -------------------------------------------------------------
    Case("ctypes_system", '    ctypes.CDLL(None).system(b"touch {sentinel}/pwned")  # <-', "import ctypes",
         policy_kinds=REFUSED, runtime_kinds=("security.escape",)),
    Case("subclasses_escape",
         '    wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]  # <-\n'
         '    wrap.__init__.__globals__["system"]("touch {sentinel}/pwned")  # <-',
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("import_via_builtins", '    __import__("builtins").__dict__["__import__"]("os").system("touch {sentinel}/pwned")  # <-',
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("obfuscated_exec", '    exec(bytes.fromhex("{payload_hex}").decode())  # <-', policy_kinds=REFUSED,
         runtime_kinds=("security.escape",)),
    Case("computed_getattr", '    getattr(__import__("o" + "s"), "sys" + "tem")("touch {sentinel}/pwned")  # <-',
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("patch_np_savez", "    np.savez = np.save = lambda *args, **kwargs: None  # <-\n    t = nl.multiply(t, 1.01)",
         mark_def=True,
         policy_kinds=REFUSED, runtime_kinds=("sim.output",)),
    # --- the process itself ----------------------------------------------------------------------
    Case("sys_exit", "    sys.exit(3)  # <-", "import sys", policy_kinds=REFUSED, runtime_kinds=("sim.error",)),
    Case("os_underscore_exit", "    os._exit(0)  # <-", "import os", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("kill_parent", "    os.kill(os.getppid(), signal.SIGKILL)  # <-", "import os, signal", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("kill_everything", "    os.kill(-1, signal.SIGKILL)  # <-", "import os, signal", policy_kinds=REFUSED,
         runtime_kinds=("security.system_access",)),
    Case("signal_handlers_then_spin", "    for s in (signal.SIGTERM, signal.SIGALRM, signal.SIGXCPU):  # <-\n"
         "        signal.signal(s, signal.SIG_IGN)  # <-\n    while True:  # <-\n        pass  # <-",
         "import signal", policy_kinds=REFUSED, runtime_kinds=("sim.incomplete", "security.system_access")),
    # --- resources --------------------------------------------------------------------------------
    Case("allocate_8_gib", "    junk = np.ones(2 * 2**30, dtype=np.float32)  # <-", policy_kinds=("sim.incomplete",),
         runtime_kinds=("sim.incomplete",)),
    Case("tile_of_2_to_40_elements", "    big = nl.ndarray((2**20, 2**20), dtype=nl.float32, buffer=nl.shared_hbm)  # <-",
         policy_kinds=("sim.incomplete", "sim.error"), runtime_kinds=("sim.incomplete", "sim.error")),
    Case("infinite_loop_python", "    while True:  # <-\n        pass  # <-", policy_kinds=TIMEOUT, runtime_kinds=TIMEOUT),
    Case("infinite_loop_numpy", "    m = np.linalg.matrix_power(np.eye(1500) * 1.0001, 10**12)  # <-",
         policy_kinds=TIMEOUT, runtime_kinds=TIMEOUT),
    Case("long_sleep", "    time.sleep(10**6)  # <-", "import time", policy_kinds=TIMEOUT, runtime_kinds=TIMEOUT),
    Case("deep_recursion", "    def down(n):\n        return down(n + 1)  # <-\n    down(0)  # <-",
         policy_kinds=("sim.error",), runtime_kinds=("sim.error",)),
    Case("c_stack_overflow", "    sys.setrecursionlimit(10**8)  # <-\n    def down(n):\n        return down(n + 1)  # <-\n"
         "    down(0)  # <-", "import sys", policy_kinds=REFUSED, runtime_kinds=("sim.incomplete", "sim.error")),
    Case("stdout_flood_1_gb", '    for _ in range(10**6):  # <-\n        print("x" * 1000)  # <-',
         policy_kinds=("sim.incomplete",), runtime_kinds=("sim.incomplete",)),
    Case("fd_flood_1_gb", '    for _ in range(10**6):  # <-\n        os.write(1, b"x" * 1000)  # <-', "import os",
         mark_def=True, policy_kinds=REFUSED, runtime_kinds=("sim.incomplete",)),
    # --- the reference does it --------------------------------------------------------------------
    Case("reference_os_system", '    os.system("touch {sentinel}/pwned")  # <-', "import os", side="reference",
         policy_kinds=REFUSED, runtime_kinds=("security.system_access",)),
    Case("reference_reads_environment", "    raise ValueError(repr(dict(os.environ)))  # <-", "import os",
         side="reference", policy_kinds=REFUSED, runtime_kinds=("sim.reference_error",)),
    Case("reference_infinite_loop", "    while True:  # <-\n        pass  # <-", side="reference",
         policy_kinds=("sim.reference_error",), runtime_kinds=("sim.reference_error",)),
    Case("reference_allocates_8_gib", "    junk = np.ones(2 * 2**30, dtype=np.float32)  # <-", side="reference",
         policy_kinds=("sim.reference_error",), runtime_kinds=("sim.reference_error",)),
    # --- host-compute cheats ---------------------------------------------------------------------
    Case("host_asarray", "    host = np.asarray(t) + 1.0  # <-", policy_kinds=("security.host_compute",),
         runtime_kinds=("security.host_compute",)),
    Case("host_tolist", "    host = t.tolist()  # <-", policy_kinds=("security.host_compute",),
         runtime_kinds=("security.host_compute",)),
    Case("host_returns_numpy", "    return np.asarray(a.data) + 1.0  # <-", mark_def=True,
         policy_kinds=("security.host_compute",), runtime_kinds=("security.host_compute",)),
    Case("host_constant_output", "    nl.store(out, value=np.full(a.shape, 2.0, np.float32))  # <-\n    return out",
         mark_def=True, policy_kinds=("security.host_compute",), runtime_kinds=("security.host_compute",)),
    Case("input_mutation", "    a.data[...] = 0.0", mark_def=True, policy_kinds=("security.input_mutation",),
         runtime_kinds=("security.input_mutation",)),
    Case("simulator_internals", "    t.alloc.data[...] = 0.0  # <-", mark_def=True,
         policy_kinds=("sim.refused", "security.host_compute"),
         runtime_kinds=("sim.output", "sim.error")),
    Case("imports_the_reference", "    from reference import ref  # <-\n    t = nl.load(a)", mark_def=True,
         policy_kinds=("sim.refused", "security.reference_access"), runtime_kinds=("security.reference_access",)),
    Case("reads_the_reference_file", '    src = open("reference.py").read()  # <-',
         policy_kinds=("sim.refused", "security.reference_access", "security.system_access"),
         runtime_kinds=("security.reference_access", "security.system_access")),
]
