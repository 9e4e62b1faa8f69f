"""The tables of the static import policy: which modules, names and attributes reach the system.

Kernel and reference files may import the NKI modules, numpy and `ALLOWED_MODULES`; the
frameworks in `standins.STAND_IN_MODULES` are served as inert stand-ins; sibling files of the
submission are checked themselves. Anything in `SYSTEM_MODULES` can reach the system (processes,
files, network, memory, the interpreter's own machinery) and its uses are findings.
"""

from __future__ import annotations

NKI_ROOTS = frozenset({"neuronxcc", "nki"})
ALLOWED_MODULES = frozenset({
    "numpy", "math", "cmath", "ml_dtypes", "functools", "itertools", "operator", "collections", "dataclasses",
    "enum", "typing", "typing_extensions", "abc", "copy", "numbers", "fractions", "decimal", "statistics",
    "string", "textwrap", "re", "warnings", "contextlib", "__future__", "random", "bisect", "heapq",
})
# numpy submodules that reach files, C code or processes
NUMPY_SYSTEM = frozenset({"numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "numpy.testing", "numpy.lib.format"})

# module -> kind of its uses: "escape" (the interpreter's machinery, the grader's own code) or
# "system_access" (processes, signals, files, network, the environment)
SYSTEM_MODULES_KIND = {
    **dict.fromkeys(("ctypes", "_ctypes", "cffi", "gc", "inspect", "types", "code", "codeop", "runpy", "importlib",
                     "builtins", "__builtin__", "pickle", "_pickle", "cPickle", "dill", "cloudpickle", "marshal",
                     "shelve", "zipimport", "pkgutil", "imp", "linecache", "tracemalloc", "sys", "evidence",
                     "grader", "copyreg"), "escape"),
    **dict.fromkeys(("os", "posix", "nt", "subprocess", "socket", "ssl", "shutil", "pathlib", "io", "_io", "tempfile",
                     "glob", "signal", "threading", "_thread", "multiprocessing", "concurrent", "asyncio", "select",
                     "selectors", "mmap", "resource", "fcntl", "pty", "tty", "termios", "pwd", "grp", "urllib",
                     "http", "ftplib", "smtplib", "telnetlib", "requests", "httpx", "atexit", "faulthandler",
                     "sysconfig", "site", "platform", "webbrowser", "sqlite3", "logging", "getpass", "sched",
                     "socketserver", "xmlrpc", "zipfile", "tarfile", "fileinput"), "system_access"),
}
SYSTEM_MODULES = frozenset(SYSTEM_MODULES_KIND)

# attributes of system modules that only describe (no reach): a use is at most medium
HARMLESS_ATTRS = {
    "os": frozenset({"path", "sep", "linesep", "pathsep", "curdir", "pardir", "extsep", "altsep", "name", "devnull"}),
    "sys": frozenset({"version_info", "version", "maxsize", "float_info", "int_info", "byteorder", "platform",
                      "implementation", "hexversion", "float_repr_style"}),
    # the level numbers (nki-samples pass `log_level=logging.INFO` to a compiler directive)
    "logging": frozenset({"NOTSET", "DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"}),
}
# numpy functions that read or write files (np.load can unpickle)
NUMPY_FILE_FUNCTIONS = frozenset({"load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt",
                                  "fromfile", "memmap", "fromregex", "DataSource"})

# builtins -> (kind, what they do)
BUILTINS = {
    "eval": ("escape", "evaluates source text"), "exec": ("escape", "executes source text"),
    "compile": ("escape", "compiles source text"), "__import__": ("escape", "imports a module by name"),
    "open": ("system_access", "opens a file"), "input": ("system_access", "reads the terminal"),
    "breakpoint": ("system_access", "starts a debugger"), "exit": ("system_access", "ends the process"),
    "quit": ("system_access", "ends the process"), "help": ("system_access", "starts the help system"),
}
INTROSPECTION_BUILTINS = frozenset({"globals", "locals", "vars"})  # medium: reach module and frame dicts
DYNAMIC_ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr"})

# attributes that walk from any object to the interpreter's internals (sandbox escapes)
ESCAPE_ATTRS = frozenset({
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__bases__", "__base__", "__mro__",
    "__getattribute__", "__reduce__", "__reduce_ex__", "__self__", "__func__", "__loader__", "__spec__",
    "__import__", "__traceback__", "__defaults__", "__kwdefaults__", "__dict__", "tb_frame", "tb_next", "f_globals",
    "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "gi_code", "cr_frame", "ag_frame", "co_code",
})
ESCAPE_NAMES = frozenset({"__builtins__", "__loader__", "__spec__"})
# the simulator's own bookkeeping on tensors: reaching it bypasses NKI instructions
SIMULATOR_INTERNALS = frozenset({"alloc", "stamp", "wmask", "lmask"})
# ...of which NKI also has a callable API of the same name (`nki.compiler.sbuf.alloc(fn)`): a call is not a read
CALLABLE_API_NAMES = frozenset({"alloc"})
