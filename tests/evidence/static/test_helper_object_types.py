"""Objects whose class only the submission's code decides: results of factories and methods (chained
calls), attributes, items of containers, a parameter defaulting to None that the function rebinds.
Where the code does not decide one class, nothing is followed (`evidence/static/helper_types.py`).

Every submission here is written for these tests: a pool class whose `take` allocates what it is asked
for (256 rows break the 128-partition limit, so a followed call shows as a finding at the pool's line),
an unrelated class with a method of the same name, an arena holding pools."""

from __future__ import annotations

from evidence.static.collectors import NkiStaticCollector
from evidence.submission import Manifest, Submission

_BETA = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"

POOL = '''import neuronxcc.nki.language as nl


class Pool:
    def __init__(self, rows):
        self.rows = rows

    def take(self, rows, cols):
        return nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)  # TAKE

    def acc(self, rows):
        return nl.zeros((rows, 4096), dtype=nl.float32, buffer=nl.psum)  # ACC


class Other:
    def take(self, rows, cols):
        return nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)  # OTHER


class Arena:
    def __init__(self, n):
        self.pools = [Pool(128) for _ in range(n)]
        self.named = {}
        self.named["a"] = Pool(128)
        self.main = Pool(128)

    def current(self) -> "Pool":
        return self.main

    def spare(self):
        return Pool(64)

    def fluent(self):
        return self

    def either(self, flag):
        if flag:
            return Pool(1)
        return Other()


def make_pool():
    return Pool(128)


def make_any(flag):
    return Pool(1) if flag else Other()
'''


def _line(src: str, marker: str) -> int:
    return next(i for i, text in enumerate(src.splitlines(), 1) if marker in text)


def _findings(files: dict[str, str]) -> set[tuple[str, str, int]]:
    manifest = Manifest.model_validate({
        "task": {"id": "object-types", "title": "helper object types"},
        "kernel": {"file": "kern/entry.py", "entry": "entry", "modules": sorted(set(files) - {"kern/entry.py"})},
        "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32"},
                   {"name": "flag", "value": True}],
    })
    items = NkiStaticCollector().collect(Submission(manifest=manifest, files=files))
    return {(i.kind, i.location.file, i.location.start_line) for i in items
            if i.severity is not None and i.severity.value != "info" and i.kind != "nki.rule_failure"}


def _entry(body: str, imports: str = "from .pool import Arena, Other, Pool, make_any, make_pool") -> str:
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return (_BETA + imports + "\n\n\n@nki.jit\ndef entry(x, flag):\n"
            "    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n" + lines + "\n    return out\n")


TAKE = ("nki.partition-over-128", "kern/pool.py", _line(POOL, "# TAKE"))
OTHER = ("nki.partition-over-128", "kern/pool.py", _line(POOL, "# OTHER"))
ACC = ("nki.psum-over-bank", "kern/pool.py", _line(POOL, "# ACC"))


def _run(body: str, **extra: str) -> set[tuple[str, str, int]]:
    return _findings({"kern/entry.py": _entry(body), "kern/pool.py": POOL, **extra})


def test_a_factory_that_returns_one_class_makes_an_object_of_it():
    assert TAKE in _run("pool = make_pool()\nt = pool.take(256, 64)")
    # a factory returning one of two classes decides nothing: neither `take` is followed
    found = _run("pool = make_any(flag)\nt = pool.take(256, 64)")
    assert TAKE not in found and OTHER not in found


def test_a_call_on_a_methods_result_is_followed_when_the_method_decides_the_class():
    assert TAKE in _run("t = Arena(2).current().take(256, 64)")  # `-> "Pool"`
    assert TAKE in _run("arena = Arena(2)\nt = arena.spare().take(256, 64)")  # `return Pool(64)`
    assert ACC in _run("arena = Arena(2)\nt = arena.fluent().current().acc(128)")  # `return self`
    found = _run("arena = Arena(2)\nt = arena.either(flag).take(256, 64)")
    assert TAKE not in found and OTHER not in found


def test_attributes_and_items_of_containers_of_one_class():
    assert TAKE in _run("arena = Arena(2)\nt = arena.pools[1].take(256, 64)")
    assert ACC in _run("arena = Arena(2)\nt = arena.named['a'].acc(128)")
    assert TAKE in _run("arena = Arena(2)\nt = arena.main.take(256, 64)")
    assert ACC in _run("pools = [Pool(1), Pool(2)]\nfor p in pools:\n    t = p.acc(128)")
    assert TAKE in _run("pools = []\npools.append(Pool(3))\nt = pools[0].take(256, 64)")
    # a list that also holds another class, and an attribute other code rebinds, decide nothing
    found = _run("pools = [Pool(1), Other()]\nt = pools[0].take(256, 64)")
    assert TAKE not in found and OTHER not in found
    found = _run("arena = Arena(2)\narena.main = Other()\nt = arena.main.take(256, 64)")
    assert TAKE not in found and OTHER not in found


STEP = '''from .pool import Pool


def step(x, pool=None):
    if pool is None:
        pool = Pool(128)
    return pool.acc(128)
'''


def test_a_parameter_defaulting_to_none_rebound_by_a_constructor():
    body = "t = step(x)"
    imports = "from .steps import step\nfrom .pool import Other, Pool"
    files = {"kern/entry.py": _entry(body, imports), "kern/pool.py": POOL, "kern/steps.py": STEP}
    assert ACC in _findings(files)
    # a caller passing a Pool too keeps it decided
    files["kern/entry.py"] = _entry("t = step(x, pool=Pool(4))\nu = step(x)", imports)
    assert ACC in _findings(files)
    # a caller passing something else: `pool.acc` could be any class's, nothing is followed
    files["kern/entry.py"] = _entry("t = step(x, Other())\nu = step(x)", imports)
    assert ACC not in _findings(files)


def test_a_nested_functions_parameter_is_not_the_outer_name_it_shadows():
    # `pool` inside `use` is whatever `use` is called with (here another class), not the outer Pool; a
    # function's names are typed as a whole, so the shadowed outer `pool` is left undecided too
    body = "pool = Pool(1)\ndef use(pool):\n    return pool.take(256, 64)\nt = use(Other())"
    found = _run(body)
    assert TAKE not in found and OTHER not in found


def test_a_factory_chain_deeper_than_the_stack_is_undecided_not_a_crash():
    # submitted code is untrusted: 600 factories each returning the next one's result
    factories = "".join(f"\n\ndef f{i}():\n    return f{i + 1}()\n" for i in range(600))
    module = POOL + factories + "\n\ndef f600():\n    return Pool(1)\n"
    body = "t = f0().take(256, 64)\nu = make_pool().acc(128)"
    found = _findings({"kern/entry.py": _entry(body, "from .pool import Pool, f0, make_pool"), "kern/pool.py": module})
    assert ACC in found  # the rest of the analysis goes on
    assert TAKE not in found
