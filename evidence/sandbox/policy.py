"""The static import policy: what submitted Python reaches, found before anything runs.

Every Python file of a submission is parsed (never executed). Imports outside the allow-list, uses
of modules that reach the system, dangerous builtins, dunder walks to the interpreter's internals,
monkeypatching of library attributes, the simulator's internals and references to the withheld
reference file become `PolicyFinding`s at their line. The severity follows what is done and where:

- inside the file's own `if __name__ == "__main__":` block (never run by the grader): low;
- in code the grader runs (module level, the entry function and what it references): the rule's
  severity, high for processes, files, sockets, ctypes, dynamic code and escapes;
- in functions nothing run by the grader references: at most medium.

A submission with a high finding is not executed at all (`PolicyReport.blocking`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evidence.sandbox import policy_rules as R
from evidence.sandbox.standins import stand_in_root

MODULE, MAIN = "<module>", "<main>"
_RANK = {"info": 0, "low": 1, "medium": 2, "high": 3}


@dataclass(frozen=True)
class PolicyFinding:
    kind: str  # import | system_access | escape | reference_access | host_compute
    severity: str  # low | medium | high
    file: str
    line: int
    what: str  # "os.system", "import subprocess", "__subclasses__", ...
    detail: str


@dataclass(frozen=True)
class PolicyReport:
    findings: tuple[PolicyFinding, ...] = ()
    stand_ins: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> framework root -> import line

    @property
    def blocking(self) -> tuple[PolicyFinding, ...]:
        return tuple(f for f in self.findings if f.severity == "high")


def module_name(rel: str) -> str:
    return str(PurePosixPath(rel).with_suffix("")).replace("/", ".")


def check_submission(files: dict[str, str], kernel: tuple[str, str], reference: tuple[str, str] | None) -> PolicyReport:
    """Findings for every Python file of a submission; `kernel`/`reference` are (file, entry)."""
    py = {rel: text for rel, text in files.items() if rel.endswith(".py")}
    siblings = {module_name(rel) for rel in py}
    findings: list[PolicyFinding] = []
    stand_ins: dict[str, dict[str, int]] = {}
    for rel, text in sorted(py.items()):
        entries = [e for f, e in (kernel, reference or ("", "")) if f == rel]
        try:
            tree = ast.parse(text, rel)
        except SyntaxError:
            continue  # the loaders report syntax errors
        analysis = _FileAnalysis(rel, siblings, entries, kernel[0], reference[0] if reference else None)
        analysis.run(tree)
        findings += analysis.findings
        if analysis.stand_ins:
            stand_ins[rel] = dict(sorted(analysis.stand_ins.items()))
    findings.sort(key=lambda f: (f.file, f.line, f.kind, f.what))
    return PolicyReport(tuple(findings), stand_ins)


@dataclass
class _Use:
    region: str
    line: int
    kind: str
    severity: str
    what: str
    detail: str


class _FileAnalysis:
    def __init__(self, rel: str, siblings: set[str], entries: list[str], kernel_file: str, reference_file: str | None):
        self.rel = rel
        self.siblings = siblings
        self.entries = entries
        self.is_reference = rel == reference_file
        self.is_kernel_side = reference_file is not None and rel != reference_file
        self.reference = reference_file
        self.kernel_module = module_name(kernel_file)
        self.bindings: dict[str, str] = {}  # local name -> qualified module path
        self.imports: list[tuple[str, int, str, tuple[str, ...], str]] = []  # region, line, module, names, as written
        self.defs: set[str] = set()
        self.module_names: set[str] = set()
        self.refs: dict[str, set[str]] = {}
        self.name_regions: dict[str, set[str]] = {}
        self.uses: list[_Use] = []
        self.stand_ins: dict[str, int] = {}  # framework root -> first import line
        self.findings: list[PolicyFinding] = []
        # `x.alloc(...)` calls: the documented direct-allocation API (`nki.compiler.sbuf.alloc(fn)`,
        # `ncc.psum.alloc(...)`) and allocator helpers; a tile's `.alloc` is not callable, so only reading it
        # as a value (`t.alloc.data`) reaches the simulator's bookkeeping
        self.called_attrs: set[int] = set()

    # --- driver --------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defs.add(node.name)
        self.module_names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for node in tree.body:
            if _is_main_guard(node):
                for child in node.body + node.orelse:
                    self._visit(child, MAIN, ())
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._visit_function(node, node.name, (), top=True)
            elif isinstance(node, ast.ClassDef):
                for child in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                    self._visit(child, MODULE, ())
                for child in node.body:
                    region = node.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else MODULE
                    self._visit(child, region, ())
            else:
                self._visit(node, MODULE, ())
        self._conclude()

    def _visit_function(self, node, region: str, scopes: tuple[frozenset[str], ...], top: bool = False) -> None:
        self._walk(self._function_parts(node, region, scopes, top))

    def _function_parts(self, node, region: str, scopes: tuple[frozenset[str], ...], top: bool = False) -> list:
        outer = MODULE if top else region
        parts = [(child, outer, scopes) for child in
                 node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d is not None]]
        local = frozenset(_local_names(node))
        return parts + [(child, region, scopes + (local,)) for child in node.body]

    def _visit(self, node: ast.AST, region: str, scopes: tuple[frozenset[str], ...]) -> None:
        self._walk([(node, region, scopes)])

    def _walk(self, todo: list) -> None:
        """Pre-order over (node, region, scopes), with an explicit stack: generated code nests expressions
        thousands deep (`a + a + ... + a`), past the interpreter's recursion limit."""
        stack = todo[::-1]
        while stack:
            stack.extend(reversed(self._step(*stack.pop())))

    def _step(self, node: ast.AST, region: str, scopes: tuple[frozenset[str], ...]) -> list:
        """Apply the rules to one node; the (node, region, scopes) to visit next, in order."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return self._function_parts(node, region, scopes)
        if isinstance(node, ast.Lambda):
            inner = scopes + (frozenset(a.arg for a in node.args.args),)
            return [(child, region, scopes) for child in node.args.defaults] + [(node.body, region, inner)]
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._import(node, region)
        elif isinstance(node, ast.Attribute):
            if self._attribute(node, region, scopes):
                return []
        elif isinstance(node, ast.Name):
            self._name(node, region, scopes)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                self.called_attrs.add(id(node.func))
            self._call(node, region, scopes)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            self._patching(node, region)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self._string(node, region)
        return [(child, region, scopes) for child in ast.iter_child_nodes(node)]

    # --- rules ---------------------------------------------------------------------------
    def _use(self, region: str, line: int, kind: str, severity: str, what: str, detail: str) -> None:
        self.uses.append(_Use(region, line, kind, severity, what, detail))

    def _import(self, node: ast.Import | ast.ImportFrom, region: str) -> None:
        if isinstance(node, ast.Import):
            pairs = [(a.name, a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0],
                      f"import {a.name}") for a in node.names]
        else:
            base = ("." * node.level) + (node.module or "")
            pairs = [(_join(base, a.name), a.asname or a.name, _join(base, a.name), f"from {base} import {a.name}")
                     for a in node.names]
        for module, bound, qualified, shown in pairs:
            if bound != "*":
                # a relative import names the submission's own module (nkilib's `utils/logging.py`), never the
                # standard library's module of that name: its binding keeps the dots, so no system rule matches it
                self.bindings[bound] = qualified
            self.imports.append((region, node.lineno, module, (bound,) if bound != "*" else (), shown))

    def _qualified(self, node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.bindings:
            return ".".join([self.bindings[node.id], *reversed(parts)])
        return None

    def _attribute(self, node: ast.Attribute, region: str, scopes) -> bool:
        """Rules on an attribute; True when the whole chain was handled (do not descend)."""
        if node.attr in R.ESCAPE_ATTRS:
            self._use(region, node.lineno, "escape", "high", node.attr,
                      f"reads {node.attr}, a way from an object to the interpreter's internals")
        elif node.attr in R.SIMULATOR_INTERNALS and not (node.attr in R.CALLABLE_API_NAMES and id(node) in self.called_attrs):
            self._use(region, node.lineno, "host_compute", "high", f".{node.attr}",
                      f"reaches the simulator's bookkeeping (.{node.attr}) instead of using NKI instructions")
        qualified = self._qualified(node)
        if qualified is None:
            return False
        if isinstance(node.ctx, ast.Load):  # stores and deletes are monkeypatching (_patching)
            self._module_use(qualified, region, node.lineno)
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        self._name(root, region, scopes)
        return True

    def _module_use(self, qualified: str, region: str, line: int) -> None:
        parts = qualified.split(".")
        root = parts[0]
        if root in R.SYSTEM_MODULES:
            if len(parts) > 1 and parts[1] not in R.HARMLESS_ATTRS.get(root, ()):
                self._use(region, line, R.SYSTEM_MODULES_KIND[root], "high", qualified,
                          f"uses {qualified}, which reaches {_reach(root)}")
        elif root == "numpy" and (any(qualified.startswith(m) for m in R.NUMPY_SYSTEM)
                                  or (len(parts) > 1 and parts[1] in R.NUMPY_FILE_FUNCTIONS)):
            self._use(region, line, "system_access", "high", qualified, f"uses {qualified}, which reads or writes files")

    def _name(self, node: ast.Name, region: str, scopes) -> None:
        name = node.id
        self.name_regions.setdefault(name, set()).add(region)
        self.refs.setdefault(region, set()).add(name)
        if not isinstance(node.ctx, ast.Load):
            return
        if name in self.bindings:
            self._module_use(self.bindings[name], region, node.lineno)  # `from os import system`
        if self._shadowed(name, scopes):
            return
        if name in R.ESCAPE_NAMES:
            self._use(region, node.lineno, "escape", "high", name, f"reads {name}, the interpreter's own namespace")
        elif name in R.BUILTINS:
            kind, does = R.BUILTINS[name]
            self._use(region, node.lineno, kind, "high", f"{name}()", f"{name} {does}")
        elif name in R.INTROSPECTION_BUILTINS:
            self._use(region, node.lineno, "escape", "medium", f"{name}()", f"{name}() reaches namespace dictionaries")

    def _shadowed(self, name: str, scopes) -> bool:
        return name in self.module_names or name in self.defs or name in self.bindings or any(name in s for s in scopes)

    def _call(self, node: ast.Call, region: str, scopes) -> None:
        f = node.func
        if not (isinstance(f, ast.Name) and f.id in R.DYNAMIC_ATTRIBUTE_BUILTINS and not self._shadowed(f.id, scopes)):
            return
        target = self._qualified(node.args[0]) if node.args else None
        attr = node.args[1] if len(node.args) > 1 else None
        if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
            on_system = target is not None and target.split(".")[0] in R.SYSTEM_MODULES
            self._use(region, node.lineno, "escape", "high" if on_system else "medium",
                      f"{f.id}({target or '...'}, <computed name>)",
                      f"{f.id}() with an attribute name computed at run time hides what it reaches")
        elif attr.value in R.ESCAPE_ATTRS:
            self._use(region, node.lineno, "escape", "high", attr.value, f"{f.id}(..., {attr.value!r}) walks to the "
                      "interpreter's internals")
        elif target is not None and f.id != "getattr":
            self._use(region, node.lineno, "escape", "high", f"{f.id}({target}.{attr.value})",
                      f"replaces {target}.{attr.value} at run time (monkeypatching)")
        elif target is not None:
            self._module_use(f"{target}.{attr.value}", region, node.lineno)

    def _patching(self, node, region: str) -> None:
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and (qualified := self._qualified(t)) is not None:
                self._use(region, node.lineno, "escape", "high", qualified,
                          f"replaces {qualified} at run time (monkeypatching a library the grader also uses)")

    def _string(self, node: ast.Constant, region: str) -> None:
        if not self.is_kernel_side or not self.reference:
            return
        name = PurePosixPath(self.reference).name
        if node.value in (self.reference, name) or node.value.endswith("/" + name):
            self._use(region, node.lineno, "reference_access", "high", name,
                      f"names the reference file {self.reference!r}: the kernel may not read what it is compared with")

    # --- severities ----------------------------------------------------------------------
    def _reached(self) -> set[str]:
        if not self.entries:  # a helper module: whatever it defines may be called
            return self.defs | {MODULE}
        reached = {MODULE, *self.entries}
        todo = list(reached)
        while todo:
            for name in self.refs.get(todo.pop(), ()):
                if name in self.defs and name not in reached:
                    reached.add(name)
                    todo.append(name)
        return reached

    def _severity(self, region: str, base: str, reached: set[str]) -> str:
        if region == MAIN:
            return "low"
        if region in reached:
            return base
        return base if _RANK[base] < _RANK["medium"] else "medium"

    def _conclude(self) -> None:
        reached = self._reached()
        strongest: dict[tuple[str, int], _Use] = {}  # one finding per kind and line: the most severe use
        for u in self.uses:
            u.severity = self._severity(u.region, u.severity, reached)
            key = (u.kind, u.line)
            if key not in strongest or _RANK[u.severity] > _RANK[strongest[key].severity]:
                strongest[key] = u
        for u in strongest.values():
            self._finding(u.kind, u.severity, u.line, u.what, u.detail)
        for region, line, module, bound, shown in self.imports:
            self._import_finding(region, line, module, bound, shown, reached)

    def _import_finding(self, region: str, line: int, module: str, bound: tuple[str, ...], shown: str,
                        reached: set[str]) -> None:
        absolute = module.lstrip(".")
        root = absolute.split(".")[0]
        target = absolute if module.startswith(".") else module
        if stand_in_root(absolute):
            self.stand_ins.setdefault(root, line)
            return
        if self.is_kernel_side and self.reference and module_name(self.reference) in (target, absolute, root):
            self._finding("reference_access", self._severity(region, "high", reached), line, shown,
                          f"imports the reference module {self.reference!r}: the kernel may not use what it is "
                          "compared with")
            return
        if self.is_reference and target in (self.kernel_module,) and self.kernel_module != module_name(self.rel):
            self._finding("reference_access", "medium" if region != MAIN else "low", line, shown,
                          "the reference imports the kernel module; it runs without it, so it cannot depend on it")
            return
        if module.startswith(".") or absolute in self.siblings or root in self.siblings:
            return
        if root in R.NKI_ROOTS or (root in R.ALLOWED_MODULES and not any(absolute.startswith(m) for m in R.NUMPY_SYSTEM)):
            return
        uses = set().union(*(self.name_regions.get(b, set()) for b in bound)) if bound else set()
        severity = "low" if region == MAIN or uses <= {MAIN} else "medium"  # unused, or only by __main__
        system = root in R.SYSTEM_MODULES or any(absolute.startswith(m) for m in R.NUMPY_SYSTEM)
        self._finding("import", severity, line, shown,
                      f"imports {absolute}, which is not on the allow-list"
                      + (f" and reaches {_reach(root)}" if system else "")
                      + (" (used only by the file's own __main__ block)" if severity == "low" else ""))

    def _finding(self, kind: str, severity: str, line: int, what: str, detail: str) -> None:
        self.findings.append(PolicyFinding(kind, severity, self.rel, line, what, detail))


def _reach(root: str) -> str:
    kind = R.SYSTEM_MODULES_KIND.get(root, "system_access")
    return "the interpreter's internals" if kind == "escape" else "the system (processes, files, network, signals)"


def _join(base: str, name: str) -> str:
    if not base or base.endswith("."):
        return base + name
    return f"{base}.{name}"


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare) or len(node.test.comparators) != 1:
        return False
    sides = [node.test.left, node.test.comparators[0]]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    consts = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and consts == {"__main__"} and isinstance(node.test.ops[0], ast.Eq)


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = fn.args
    names = {a.arg for a in args.args + args.posonlyargs + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node is not fn:
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names
