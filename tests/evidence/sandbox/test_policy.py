"""The static import policy: what submitted Python reaches, its severity by what is done and where."""

from __future__ import annotations

import textwrap

import pytest

from evidence.sandbox.policy import check_submission
from tests.conftest import ROOT

HEAD = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
REF = "import numpy as np\n\ndef ref(a):\n    return a\n"


def findings(kernel_body: str, ref: str = REF, **files):
    src = HEAD + textwrap.dedent(kernel_body)
    report = check_submission({"kernel.py": src, "reference.py": ref, **files}, ("kernel.py", "kernel"),
                              ("reference.py", "ref"))
    return {(f.kind, f.severity, f.what, f.line) for f in report.findings}, report


def test_import_used_only_by_the_main_block_is_low_and_nothing_blocks():
    got, report = findings("""
        import os, argparse

        def kernel(a):
            return a

        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            os.system("echo run me")
    """)
    assert got == {("import", "low", "import os", 5), ("import", "low", "import argparse", 5),
                   ("system_access", "low", "os.system", 12)}
    assert report.blocking == ()


@pytest.mark.parametrize("body, kind, what", [
    ("import os\n    os.system('id')", "system_access", "os.system"),
    ("import subprocess\n    subprocess.run(['id'])", "system_access", "subprocess.run"),
    ("import socket\n    socket.socket().connect(('10.0.0.1', 80))", "system_access", "socket.socket"),
    ("import ctypes\n    ctypes.CDLL(None)", "escape", "ctypes.CDLL"),
    ("x = ().__class__.__base__.__subclasses__()", "escape", "__subclasses__"),
    ("g = kernel.__globals__", "escape", "__globals__"),
    ("b = __builtins__", "escape", "__builtins__"),
    ("exec(bytes.fromhex('7072696e74283129').decode())", "escape", "exec()"),
    ("f = __import__('o' + 's')", "escape", "__import__()"),
    ("from os import system as run\n    run('id')", "system_access", "os.system"),
    ("import os\n    getattr(os, 'sys' + 'tem')('id')", "escape", "getattr(os, <computed name>)"),
    ("np.savez = lambda *a, **k: None", "escape", "numpy.savez"),
    ("setattr(np, 'savez', print)", "escape", "setattr(numpy.savez)"),
    ("data = open('/etc/passwd').read()", "system_access", "open()"),
    ("v = np.load('/tmp/x.npy', allow_pickle=True)", "system_access", "numpy.load"),
    ("import sys\n    sys.exit(3)", "escape", "sys.exit"),
    ("import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)", "system_access", "signal.signal"),
    ("import threading\n    threading.Thread(target=print).start()", "system_access", "threading.Thread"),
    ("v = a.alloc.data", "host_compute", ".alloc"),
])
def test_reaching_the_system_from_the_kernel_is_high_and_blocks(body, kind, what):
    got, report = findings(f"def kernel(a):\n    {body}\n    return a\n")
    assert any(k == kind and s == "high" and w == what for k, s, w, _ in got), got
    assert report.blocking


def test_a_function_nothing_calls_is_medium_and_helpers_called_by_the_kernel_are_high():
    got, _ = findings("""
        import os

        def unused():
            os.system("id")

        def helper():
            os.kill(1, 9)

        def kernel(a):
            helper()
            return a
    """)
    assert ("system_access", "medium", "os.system", 8) in got
    assert ("system_access", "high", "os.kill", 11) in got


def test_module_level_code_runs_at_import_and_counts_as_reached():
    got, _ = findings("import subprocess\nsubprocess.Popen(['id'])\n\ndef kernel(a):\n    return a\n")
    assert ("system_access", "high", "subprocess.Popen", 5) in got


def test_parameters_and_locals_shadow_builtins():
    got, report = findings("""
        def kernel(input, open=None):
            compile = nl.add
            exit = 3
            return input
    """)
    assert got == set() and report.blocking == ()


def test_direct_allocation_calls_are_the_nki_api_not_the_simulators_bookkeeping():
    # `ncc.sbuf.alloc(fn)` / `psum.alloc(...)` (nki.compiler direct allocation) and an allocator helper's
    # `.alloc(...)` are calls; reading a tile's `.alloc` as a value still reaches the simulator's internals
    got, report = findings("""
        import neuronxcc.nki.compiler as ncc

        class Pool:
            def alloc(self, shape):
                return nl.ndarray(shape, dtype=nl.float32, buffer=nl.sbuf)

        def kernel(a):
            buf = nl.ndarray((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=ncc.sbuf.alloc(lambda *i: (0, 0)))
            acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=ncc.psum.alloc(lambda *i: (0, 0, 0)))
            t = Pool().alloc((128, 64))
            return a
    """)
    assert got == set() and report.blocking == ()
    got, report = findings("def kernel(a):\n    f = a.alloc\n    f.data[...] = 0\n    return a\n")
    assert ("host_compute", "high", ".alloc", 5) in got and report.blocking


def test_the_kernel_may_not_reach_the_reference_and_the_reference_may_not_import_the_kernel():
    got, _ = findings("import reference\n\ndef kernel(a):\n    src = 'reference.py'\n    return a\n",
                      ref="import kernel\n\ndef ref(a):\n    return a\n")
    assert ("reference_access", "high", "import reference", 4) in got
    assert ("reference_access", "high", "reference.py", 7) in got
    assert ("reference_access", "medium", "import kernel", 1) in got  # in reference.py


def test_frameworks_are_stand_ins_and_siblings_are_checked_themselves():
    _, report = findings("import torch\nimport jax.numpy as jnp\nimport helpers\n\ndef kernel(a):\n    return a\n",
                         **{"helpers.py": "import os\nos.remove('/x')\n"})
    assert report.stand_ins == {"kernel.py": {"jax": 5, "torch": 4}}
    assert {(f.file, f.what, f.severity) for f in report.findings} == {
        ("helpers.py", "import os", "medium"), ("helpers.py", "os.remove", "high")}


def test_kernels_of_the_corpus_examples_and_calibration_sets_have_no_findings():
    files = [p for d in ("tests/corpus/nki", "tests/corpus/nki_standalone", "tests/corpus/cuda", "examples",
                         "evals/calibration") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 100
    noisy = {}
    for path in files:
        # an example is a submission folder: its kernel may import the helper modules beside it
        folder = path.parent.glob("*.py") if path.parent.parent.name == "examples" else [path]
        report = check_submission({q.name: q.read_text() for q in folder}, (path.name, "kernel"), None)
        if report.findings:
            noisy[str(path.relative_to(ROOT))] = [(f.what, f.severity) for f in report.findings]
    assert noisy == {}


def test_logging_level_numbers_are_not_system_access_but_its_handlers_are():
    # nki-samples pass `log_level=logging.INFO` to a compiler directive: a number, reaching nothing
    got, report = findings("""
        import logging

        @nki.compiler.enable_stack_allocator(log_level=logging.INFO)
        @nki.jit
        def kernel(a):
            return a
    """)
    assert got == {("import", "medium", "import logging", 5)} and report.blocking == ()
    got, report = findings("""
        import logging

        @nki.jit
        def kernel(a):
            logging.getLogger().addHandler(logging.FileHandler('/tmp/x'))
            return a
    """)
    assert ("system_access", "high", "logging.getLogger", 9) in got and report.blocking


def test_a_relative_import_of_a_helper_named_like_a_system_module_is_the_submissions_own():
    # library trees keep their own `utils/logging.py`; `from .logging import get_logger` cannot reach the stdlib
    helper = "def get_logger(name):\n    return name\n"
    for line in ("from .logging import get_logger", "from . import logging\nget_logger = logging.get_logger"):
        got, report = findings(f"""
            {line.splitlines()[0]}
            {line.splitlines()[1] if len(line.splitlines()) > 1 else ''}

            @nki.jit
            def kernel(a):
                get_logger("k")
                return a
        """, **{"logging.py": helper})
        assert got == set() and report.blocking == ()
    # the absolute import is still the standard library's
    got, report = findings("""
        from logging import getLogger

        @nki.jit
        def kernel(a):
            getLogger().addHandler(None)
            return a
    """)
    assert report.blocking
