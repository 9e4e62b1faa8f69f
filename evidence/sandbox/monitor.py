"""The child's runtime monitor: what submitted code tries beyond computing, as evidence with a line.

A PEP 578 audit hook (which Python code cannot remove) sees processes, signals to other processes,
sockets, ctypes, file access, dynamic code and some introspection. An event counts when submitted
code caused it: for dangerous operations, when a frame of a submission file is anywhere on the
stack (`subprocess.run` raises its event inside subprocess.py); for compile/exec, imports and
attribute events, only when submitted code is the direct caller (imports of the standard library
compile and exec code of their own). Each event is appended to `events.jsonl` at once, so it
survives a child that is killed next, and, under the import policy, blocked with PermissionError.

This is defence in depth, not the boundary: code with full Python power can evade an in-process
monitor (and can rewrite its own outputs), which is why the process runs in bubblewrap with
rlimits and the comparison with the reference happens in the grader's process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from evidence.sandbox.protocol import RuntimeEvent

_getframe, _write, _realpath = sys._getframe, os.write, os.path.realpath
_THIS_FILE = __file__
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
MAX_EVENTS = 200
THREAD_EXIT_GRACE_S = 0.25  # a joined thread leaves /proc/self/task a moment after join() returns

# event -> (kind, what): dangerous whenever submitted code is on the stack
_ANYWHERE = {
    "os.system": ("system_access", "os.system"), "subprocess.Popen": ("system_access", "subprocess"),
    "os.exec": ("system_access", "os.exec*"), "os.posix_spawn": ("system_access", "os.posix_spawn"),
    "os.spawn": ("system_access", "os.spawn*"), "os.fork": ("system_access", "os.fork"),
    "os.forkpty": ("system_access", "os.forkpty"), "os.kill": ("system_access", "os.kill"),
    "os.killpg": ("system_access", "os.killpg"), "signal.pthread_kill": ("system_access", "signal.pthread_kill"),
    "os.putenv": ("system_access", "os.putenv"), "os.unsetenv": ("system_access", "os.unsetenv"),
    "ctypes.dlopen": ("escape", "ctypes"), "ctypes.dlsym": ("escape", "ctypes"),
    "ctypes.cdata": ("escape", "ctypes"), "ctypes.addressof": ("escape", "ctypes"),
    "ctypes.call_function": ("escape", "ctypes"), "ctypes.string_at": ("escape", "ctypes"),
    "sys.addaudithook": ("escape", "sys.addaudithook"), "gc.get_objects": ("escape", "gc.get_objects"),
    "gc.get_referrers": ("escape", "gc.get_referrers"), "gc.get_referents": ("escape", "gc.get_referents"),
    "builtins.input": ("system_access", "input"), "builtins.breakpoint": ("system_access", "breakpoint"),
    "marshal.load": ("escape", "marshal"), "pickle.find_class": ("escape", "pickle"),
    "resource.setrlimit": ("system_access", "resource.setrlimit"),
}
_SOCKET = frozenset({f"socket.{e}" for e in (
    "__new__", "bind", "connect", "getaddrinfo", "gethostbyname", "gethostbyaddr", "getnameinfo", "sendmsg",
    "sendto", "sethostname", "getservbyname", "getservbyport")})
_PATH_EVENTS = {"open", "os.listdir", "os.scandir", "os.remove", "os.rmdir", "os.rename", "os.link",
                "os.symlink", "os.chmod", "os.chown", "os.mkdir", "os.truncate", "os.utime", "shutil.rmtree",
                "shutil.copyfile", "shutil.move", "os.chdir"}
_WRITING = {"os.remove", "os.rmdir", "os.rename", "os.link", "os.symlink", "os.chmod", "os.chown", "os.mkdir",
            "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move"}
_DIRECT = {"compile": ("escape", "compile/eval/exec of source text"), "exec": ("escape", "exec of a code object"),
           "function.__new__": ("escape", "building a function from a code object"),
           "code.__new__": ("escape", "building a code object"),
           # (not "object.__getattr__": the simulator reads frames' f_code on every instruction, and
           # the static policy already flags __code__, f_code and the like)
           "object.__setattr__": ("escape", "setting an attribute of a type or function"),
           "object.__delattr__": ("escape", "deleting an attribute of a type or function")}
_HANDLED = frozenset(_ANYWHERE) | _PATH_EVENTS | frozenset(_DIRECT) | _SOCKET | {"import"}


class OutputLimit(BaseException):
    """Submitted code wrote more to stdout/stderr than the child allows (not catchable as Exception)."""


class Monitor:
    def __init__(self, src_root: str, events_fd: int, *, block: bool, read_roots: list[str],
                 write_roots: list[str], withheld: tuple[str, ...]) -> None:
        self.src = src_root.rstrip("/") + "/"
        self.fd = events_fd
        self.block = block
        self.read_roots = tuple(r.rstrip("/") + "/" for r in read_roots)
        self.write_roots = tuple(r.rstrip("/") + "/" for r in write_roots)
        self.withheld = {w: w.removesuffix(".py").replace("/", ".") for w in withheld}  # file -> module name
        self.seen: set[tuple] = set()
        self.count = 0
        self.threads = self.signals = None
        self.busy = False
        self.hook = self._make_hook()

    # --- attribution ---------------------------------------------------------------------
    def _site(self, direct: bool, importing: bool = False) -> tuple[str, int] | None:
        """(file, line) of the submission frame that caused the current event, or None.

        `direct`: only when that frame raised the event itself (for an import, through importlib)."""
        f = _getframe(1)
        while f is not None and f.f_code.co_filename == _THIS_FILE:
            f = f.f_back
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith(self.src):
                return name[len(self.src):], f.f_lineno
            if direct and not (importing and name.startswith("<frozen importlib")):
                return None
            f = f.f_back
        return None

    def record(self, kind: str, what: str, detail: str, site: tuple[str | None, int] | None, blocked: bool) -> None:
        file, line = site or (None, 0)
        key = (kind, what, file, line)
        if key in self.seen or self.count >= MAX_EVENTS:
            return
        self.seen.add(key)
        self.count += 1
        event = RuntimeEvent(kind=kind, what=what, detail=detail[:300], file=file, line=line, blocked=blocked)
        _write(self.fd, (event.model_dump_json() + "\n").encode())

    def _act(self, kind: str, what: str, detail: str, site, blockable: bool = True) -> None:
        blocked = self.block and blockable
        self.record(kind, what, detail, site, blocked)
        if blocked:
            raise PermissionError(f"blocked by the grader's sandbox: {what}")

    # --- the audit hook ------------------------------------------------------------------
    def _make_hook(self):
        """The audit hook. It runs for every audited event (the simulator raises several per
        instruction), so the common case is one set lookup with everything bound locally."""
        def hook(event: str, args: tuple, handled=_HANDLED, monitor=self) -> None:
            if event in handled and not monitor.busy:  # busy: events the monitor's own frame walk raises
                monitor.busy = True
                try:
                    monitor._handle(event, args)
                finally:
                    monitor.busy = False
        return hook

    def _handle(self, event: str, args: tuple) -> None:
        if event in _DIRECT:
            site = self._site(direct=True)
            if site is not None and not (event == "object.__setattr__" and args[1] == "__module__"):
                kind, what = _DIRECT[event]
                name = f" {args[1]}" if event.startswith("object.") else ""
                self._act(kind, what + name, repr(args[0])[:120] if event == "compile" else "", site)
        elif event == "import":
            self._import(str(args[0]))
        elif event in _PATH_EVENTS:
            self._path(event, args)
        else:
            site = self._site(direct=False)
            if site is not None:
                kind, what = _ANYWHERE.get(event, ("system_access", event))
                self._act(kind, what, repr(args)[:200], site)

    def _import(self, module: str) -> None:
        site = self._site(direct=True, importing=True)
        if site is None:
            return
        for file, stem in self.withheld.items():  # (imports of system modules are the static policy's)
            if module == stem:
                self.record("reference_access", f"import {module}", f"imports {file}, which is kept out of this run",
                            site, False)

    def _path(self, event: str, args: tuple) -> None:
        path = args[0]
        if isinstance(path, int) or path is None:
            return
        site = self._site(direct=False)
        if site is None:
            return
        path = os.fsdecode(path)
        full = _realpath(path if path.startswith("/") else os.path.join(os.getcwd(), path))
        writing = event in _WRITING or (event == "open" and _opens_for_writing(args))
        name = full.rsplit("/", 1)[-1]
        if any(name == w.rsplit("/", 1)[-1] for w in self.withheld):  # wherever it looks for it
            self._act("reference_access", f"{'writes' if writing else 'reads'} {name}", full, site)
        roots = self.write_roots if writing else self.read_roots + self.write_roots
        if (full + "/").startswith(roots) or full in ("/dev/null", "/dev/urandom"):
            return
        verb = "writes" if writing else "reads" if event == "open" else event
        self._act("system_access", f"{verb} {full}", "", site)

    # --- process state around the run ----------------------------------------------------
    def snapshot(self) -> None:
        self.threads = _thread_ids()
        self.signals = _handlers()

    def after_run(self, site: tuple[str | None, int]) -> None:
        """Events for threads left running and signal handlers installed by the submitted code (the
        simulator joins its own worker threads before simulate() returns)."""
        self.busy = True  # from here on only the child's own code runs (threads it left are not watched)
        extra = self._extra_threads()
        if extra > 0:
            self.record("system_access", "threads left running", f"{extra} thread(s) outlive the call", site, False)
        for sig, handler in _handlers().items():
            if self.signals is not None and handler is not self.signals.get(sig):
                self.record("system_access", f"signal handler for {signal.Signals(sig).name}", "", site, False)

    def _extra_threads(self) -> int:
        """Threads started during the run and still there; a thread joined just before the call
        returned can stay listed in /proc for a moment, so give such threads a short grace."""
        deadline = time.monotonic() + THREAD_EXIT_GRACE_S
        while True:
            extra = len(_thread_ids() - (self.threads or set()))
            if not extra or time.monotonic() >= deadline:
                return extra
            time.sleep(0.01)

    def exit_wrapper(self, real_exit):
        def _exit(code: int) -> None:
            self.busy = True  # walking the frames raises audit events of its own
            self.record("system_access", "os._exit", f"ends the process with code {code}", self._site(False), False)
            real_exit(code)
        return _exit


def _opens_for_writing(args: tuple) -> bool:
    mode, flags = args[1], args[2]
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return bool(flags & _WRITE_FLAGS) if isinstance(flags, int) else False


def _thread_ids() -> set[int]:
    """Native ids of the process's threads (from /proc, so threads started with `_thread` count too)."""
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return {t.native_id for t in threading.enumerate() if t.native_id is not None}


def _handlers() -> dict[int, object]:
    out = {}
    for sig in signal.valid_signals():
        try:
            out[int(sig)] = signal.getsignal(sig)
        except (ValueError, OSError):
            continue
    return out
