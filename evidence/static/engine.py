"""Parse once, visit once: the traversal that feeds every rule and the facts.

`analyze(source, ...)` parses the file with libcst, builds one `MetadataWrapper` and walks it
once with `Engine` (line spans come from `positions.AstLines`, see there). The engine keeps the semantic context (scopes and symbolic values,
the function and loop stacks), records functions, loops, calls and assignments, and dispatches
each rule's hooks in the same walk. Each hook call is timed per rule; an exception in a rule
disables that rule for the file and becomes a `RuleFailure`, while the others keep reporting.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from evidence.static.branches import BranchScopes
from evidence.static.dialect import DialectInfo, detect
from evidence.static.evaluate import Evaluator
from evidence.static.framework import SEMANTIC_HOOKS, Finding, Rule, RuleFailure, rules_for
from evidence.static.helper_args import call_arguments, top_level_defaults, top_level_params
from evidence.static.engine_objects import ObjectCalls
from evidence.static.helper_classes import ObjectModel
from evidence.static.helper_args import hints as helper_hints
from evidence.static.model import AssignInfo, CallInfo, FunctionInfo, InputBinding, LoopInfo
from evidence.static.nesting import nesting_error
from evidence.static.param_bindings import bind_params
from evidence.static.positions import TRACKED, AstLines, PositionError, children
from evidence.static.records import RecordClass
from evidence.static.scope import Scope, entry_scope
from evidence.static.rulekit import matmul_operands
from evidence.static.shapes import MATMUL_CALLS, Binding, Dtype, LoopVar, Tensor

_KERNEL_DECORATORS = ("jit", "baremetal", "benchmark", "profile", "simulate_kernel", "trace", "nki_jit", "kernel")
_ITERATORS = {
    "nl.affine_range": "affine_range", "nl.sequential_range": "sequential_range",
    "nl.static_range": "static_range", "range": "range", "nl.dynamic_range": "sequential_range",
}
_NESTING = (cst.If, cst.While, cst.With, cst.Try, cst.For)
# Reductions and statistics whose operands the facts need (their dtypes, their reduce_res).
_KEEP_OPERANDS = frozenset({
    "nl.sum", "nl.max", "nl.min", "nl.mean", "nl.var", "nisa.tensor_reduce", "nisa.bn_stats", "nisa.bn_aggr",
    "nisa.tensor_partition_reduce", "nisa.tensor_tensor_scan", "nisa.activation_reduce", "nisa.tensor_scalar_reduce",
    "nisa.activation",
})


class StaticAnalysisError(ValueError):
    """A kernel source that cannot be analysed (e.g. a syntax error), named by file:line."""


@dataclass(frozen=True)
class SkippedFunction:
    """A top-level function the entry kernel does not reach: walked for positions, never analysed."""

    name: str
    start: int
    end: int
    is_kernel: bool


@dataclass
class Analysis:
    file: str
    dialect: DialectInfo
    lines: int
    functions: list[FunctionInfo]
    findings: list[Finding]
    failures: list[RuleFailure]
    timings: dict[str, float] = field(default_factory=dict)
    skipped: list[SkippedFunction] = field(default_factory=list)
    entry: str | None = None
    seconds: float = 0.0  # wall time of the whole analysis (parse included when analyze parsed)
    imported_calls: dict[str, list[dict[str, object]]] = field(default_factory=dict)  # see Engine.imported
    # the arguments of calls this file makes to methods of other files, by (module, `Cls.meth`)
    method_calls: dict[tuple[str, str], list[dict[str, object]]] = field(default_factory=dict)
    # the submission's helper modules that do not parse (evidence.static.unparsed), set on the kernel file's analysis
    unparsed_modules: list = field(default_factory=list)


class Engine(ObjectCalls, cst.CSTVisitor):
    METADATA_DEPENDENCIES: tuple = ()

    def __init__(
        self, file: str, dialect: DialectInfo, rule_classes: Sequence[type[Rule]],
        inputs: Sequence[InputBinding], entry: str | None, options: dict[str, object] | None = None,
        positions: AstLines | None = None, scope: Scope | None = None,
        param_hints: dict[str, dict[str, object]] | None = None,
    ) -> None:
        super().__init__()
        # helper functions of this file: their parameters, what callers passed (helper_args), and
        # the values a previous walk found every caller agreeing on
        self.helpers: dict[str, tuple[str, ...]] = {}
        self.helper_defaults: dict[str, dict[str, cst.BaseExpression]] = {}
        self.helper_calls: dict[str, list[dict[str, object]]] = {}
        # functions of the submission's helper modules this file imports, by the name a call uses
        # (`f` for `from .m import f`, `m.f` for `from . import m`): their parameters and defaults, and
        # the arguments of every in-scope call (`helper_modules`)
        self.imported: dict[str, tuple[tuple[str, ...], dict[str, cst.BaseExpression]]] = {}
        self.imported_calls: dict[str, list[dict[str, object]]] = {}
        # calls through objects of the submission's classes (`helper_classes`): None when not followed;
        # a call to a method of this file is recorded as a helper call (`Cls.meth`), others here
        self.objects: ObjectModel | None = None
        self.method_calls: dict[tuple[str, str], list[dict[str, object]]] = {}
        self._classes: list[str] = []  # the top-level class being walked
        self.param_hints = param_hints or {}
        self.positions = positions
        self.scope = scope or Scope()
        self.skipped: list[SkippedFunction] = []
        self._skip: cst.CSTNode | None = None  # the out-of-scope subtree being walked
        self._pos: dict[int, tuple[int, int]] = {}
        self._open: list[tuple[int, int]] = [(1, 1)]  # spans of the tracked ancestors being visited
        self._suppress = 0  # inside decorators/parameters: calls there are not kernel work
        # Task facts rules may use, e.g. fp32_required (the task's tolerance needs fp32 products).
        self.options: dict[str, object] = dict(options or {})
        self.file, self.dialect, self.inputs, self.entry = file, dialect, list(inputs), entry
        self.module_scope: dict[str, Binding] = {k: Binding(v) for k, v in dialect.aliases.items()}
        self.scopes: list[dict[str, Binding]] = [self.module_scope]
        self.ev = Evaluator(self.lookup, standalone=dialect.dialect == "standalone")
        self._whiles: list[cst.While] = []
        self.branches = BranchScopes(  # names bound inside if/else
            self.value, lambda: self.scopes[-1], self.lookup,
            lambda: [(lp.id, lp.node) for lp in self.loop_stack] + [(None, w) for w in self._whiles])
        # Lines of code in a branch the task's values rule out (`if dropout_p > 0.0:` with the
        # default 0.0): never traced, so no rule reports there (`Rule.report` asks `ruled_out`).
        self._dead_lines: set[int] = set()
        self.functions: list[FunctionInfo] = []
        self.function_stack: list[FunctionInfo] = []
        self.loop_stack: list[LoopInfo] = []
        self.nesting: list[int] = [0]
        self._inputs_bound = False
        self._loop_ids = 0
        self.failures: list[RuleFailure] = []
        self.timings: dict[str, float] = {}
        self.rules = [cls(self) for cls in rule_classes]
        self._visit_hooks: dict[str, list] = {}
        self._leave_hooks: dict[str, list] = {}
        self._sem: dict[str, list] = {h: [] for h in SEMANTIC_HOOKS}
        for rule in self.rules:
            self.timings[rule.id] = 0.0
            for attr in dir(type(rule)):
                if attr.startswith("visit_"):
                    self._visit_hooks.setdefault(attr[6:], []).append((rule, getattr(rule, attr)))
                elif attr.startswith("leave_") and attr not in SEMANTIC_HOOKS:
                    self._leave_hooks.setdefault(attr[6:], []).append((rule, getattr(rule, attr)))
            for hook in SEMANTIC_HOOKS:
                if getattr(type(rule), hook) is not getattr(Rule, hook):
                    self._sem[hook].append((rule, getattr(rule, hook)))
        self._dead: set[str] = set()
        self.wrapped: dict[str, str] = {}  # functions made kernels by `k = nki.jit(f)` at module level

    # -- context API for rules ------------------------------------------------------------
    def lookup(self, name: str) -> Binding | None:
        for scope in reversed(self.scopes):
            b = scope.get(name)
            if b is not None:
                return b
        return None

    def value(self, node: cst.CSTNode | None) -> object:
        return self.ev.ev(node)

    def deps(self, node: cst.CSTNode | None) -> tuple[frozenset[int], frozenset[str]]:
        return self.ev.deps_of(node)

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        if self.positions is None:  # exact mode: libcst's own positions
            pos = self.get_metadata(PositionProvider, node, None)
            if pos is None:
                raise PositionError(f"libcst gave no position for a {type(node).__name__} node of the analysed module")
            return pos.start.line, pos.end.line
        return self._pos.get(id(node)) or self._open[-1]

    def ruled_out(self, line: int) -> bool:
        """Whether `line` lies in a branch the known values rule out (`BranchScopes.disabled`)."""
        return line in self._dead_lines

    @property
    def function(self) -> FunctionInfo | None:
        return self.function_stack[-1] if self.function_stack else None

    # -- dispatch -------------------------------------------------------------------------
    def _run(self, rule: Rule, fn, *args: object) -> None:
        if rule.id in self._dead:
            return
        t0 = time.perf_counter()
        try:
            fn(*args)
        except Exception as exc:  # a rule crash is a value; the other rules keep going
            self._dead.add(rule.id)
            line = None
            node = args[0] if args else None
            if isinstance(node, cst.CSTNode):
                line = self.lines(node)[0]
            elif hasattr(node, "start"):
                line = node.start  # type: ignore[union-attr]
            msg = (str(exc).splitlines() or [""])[0][:300]
            if isinstance(exc, RecursionError):
                msg = "code nested deeper than this rule follows (the interpreter's recursion limit); rule skipped"
            self.failures.append(RuleFailure(rule.id, type(exc).__name__, msg, line))
        finally:
            self.timings[rule.id] += time.perf_counter() - t0

    def scan_wrappers(self, module: cst.Module) -> None:
        """`kernel = nki.jit(f)` / `nki.baremetal(f)` at module level make `f` a kernel too."""
        for stmt in module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                call = getattr(small, "value", None)
                if isinstance(call, cst.Call) and call.args and isinstance(call.args[0].value, cst.Name):
                    name = self.ev.api_name(call.func) or ""
                    if name.startswith("nki.") and name.rsplit(".", 1)[-1] in _KERNEL_DECORATORS:
                        self.wrapped[call.args[0].value.value] = name + "()"

    def walk(self, node: cst.CSTNode) -> None:
        """Read-only pre-order walk in libcst's visiting order (libcst's own `visit` rebuilds every
        node on the way back up, which costs more than all the rules). An explicit stack, not recursion:
        generated code nests expressions thousands deep (`a + a + ... + a`)."""
        stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
        while stack:
            node, leaving = stack.pop()
            if leaving:
                self.on_leave(node)
                continue
            stack.append((node, True))
            if self.on_visit(node):
                stack.extend((child, False) for child in reversed(children(node)))

    def _emit(self, hook: str, obj: object) -> None:
        for rule, fn in self._sem[hook]:
            self._run(rule, fn, obj)

    def on_visit(self, node: cst.CSTNode) -> bool:
        cls = type(node)
        if cls in TRACKED:
            if self.positions is not None:
                span = self.positions.take(cls) or self._open[-1]
                self._pos[id(node)] = span
            else:
                span = self.lines(node)
            self._open.append(span)
            if self._skip is not None:
                return True
            if self._out_of_scope(node, span):
                self._skip = node
                return True
        elif self._skip is not None:
            return True
        elif (cls is cst.ClassDef and self.scope.skip_classes and not self.function_stack
              and node.name.value not in self.scope.walked_classes):
            self._skip = node
            return True
        # a node inside a dead branch lies within its parent's lines, recorded already
        if cls in TRACKED and span[0] not in self._dead_lines and self.branches.disabled():
            self._dead_lines.update(range(span[0], span[1] + 1))
        tname = cls.__name__
        own = getattr(self, "visit_" + tname, None)
        descend = own(node) if own is not None else True
        hooks = self._visit_hooks.get(tname)
        if hooks:
            for rule, fn in hooks:
                self._run(rule, fn, node)
        return descend is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        cls = type(original_node)
        if self._skip is not None:
            if original_node is self._skip:
                self._skip = None
            if cls in TRACKED:
                self._open.pop()
            return
        tname = cls.__name__
        hooks = self._leave_hooks.get(tname)
        if hooks:
            for rule, fn in hooks:
                self._run(rule, fn, original_node)
        own = getattr(self, "leave_" + tname, None)
        if own is not None:
            own(original_node)
        if cls in TRACKED:
            self._open.pop()

    # -- scope ----------------------------------------------------------------------------
    def _out_of_scope(self, node: cst.CSTNode, span: tuple[int, int]) -> bool:
        """A top-level function the entry does not reach, or a module-level `__main__` block."""
        if self.function_stack:
            return False
        if isinstance(node, cst.FunctionDef) and not self.scope.includes(span[0]):
            self.skipped.append(SkippedFunction(node.name.value, span[0], span[1], bool(self._decorator(node))))
            return True
        return isinstance(node, cst.If) and span[0] in self.scope.main_guards

    def _decorator(self, node: cst.FunctionDef) -> str:
        """The NKI kernel decorator of a function (`nki.jit`, ...), or the wrapper that makes it one."""
        decorator = ""
        for d in node.decorators:
            expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            name = self.ev.api_name(expr) or ""
            if name.rsplit(".", 1)[-1] in _KERNEL_DECORATORS:
                decorator = name
        return decorator or self.wrapped.get(node.name.value, "")

    # -- functions ------------------------------------------------------------------------
    # Decorators and parameter defaults are walked (positions stay in step) but are not kernel work.
    def visit_Decorator(self, node: cst.Decorator) -> None:
        self._suppress += 1

    def leave_Decorator(self, node: cst.Decorator) -> None:
        self._suppress -= 1

    visit_Parameters = visit_Decorator
    leave_Parameters = leave_Decorator

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        decorator = self._decorator(node)
        start, end = self.lines(node)
        params = [p for p in node.params.params] + [p for p in node.params.kwonly_params]
        mutable = frozenset(
            p.name.value for p in params
            if p.annotation is not None and "mutable" in (self.ev.api_name(_ann_base(p.annotation.annotation)) or "")
        )
        # the manifest's entry is the kernel even undecorated (`nki.baremetal(lora_fwd)` in the file's own harness)
        entry = not self.function_stack and node.name.value == self.entry
        fn = FunctionInfo(node.name.value, node, bool(decorator) or entry, decorator, start, end,
                          tuple(p.name.value for p in params), mutable)
        self.scopes[-1][fn.name] = Binding(None)
        self.functions.append(fn)
        self.function_stack.append(fn)
        outermost = not self._inputs_bound and len(self.function_stack) == 1
        owner = self._classes[-1] if self._classes and len(self.function_stack) == 1 else None
        key = f"{owner}.{fn.name}" if owner is not None and self.objects is not None else fn.name
        scope, took_inputs = bind_params(fn, params, self.inputs, self.entry, self.param_hints, self.value,
                                         self.ev.api_name, outermost, key)
        self._inputs_bound = self._inputs_bound or took_inputs
        if self.objects is not None:
            self._bind_objects(node, scope, owner)
        self.scopes.append(scope)
        self.nesting.append(0)
        self._saved_loops = getattr(self, "_saved_loops", [])
        self._saved_loops.append(self.loop_stack)
        self.loop_stack = []
        return True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        fn = self.function_stack.pop()
        self._emit("leave_function", fn)
        self.scopes.pop()
        self.nesting.pop()
        self.loop_stack = self._saved_loops.pop()

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self.function_stack:
            self.function_stack[-1].returns_value = True

    # -- loops and nesting ----------------------------------------------------------------
    def visit_For(self, node: cst.For) -> None:
        it = node.iter
        kind, trip, trip_expr = "other", None, None
        if isinstance(it, cst.Call):
            name = self.ev.api_name(it.func) or ""
            kind = _ITERATORS.get(name, "other")
            if kind != "other":
                args = [self.value(a.value) for a in it.args if a.keyword is None]
                trip_expr = it.args[0].value if len(it.args) == 1 else (it.args[1].value if len(it.args) > 1 else None)
                trip = _trip(args)
        else:
            self.value(it)
        self._loop_ids += 1
        start, end = self.lines(node)
        parent = self.loop_stack[-1] if self.loop_stack else None
        loop = LoopInfo(self._loop_ids, kind, trip, _target_names(node.target), len(self.loop_stack) + 1,
                        start, end, node, self.function, parent, trip_expr)
        for v in loop.vars:
            self.scopes[-1][v] = Binding(LoopVar(loop.id, trip), frozenset({loop.id}), frozenset({v}),
                                         tuple(x.id for x in self.loop_stack) + (loop.id,))
        self.loop_stack.append(loop)
        if self.function is not None:
            self.function.loops.append(loop)
        self.nesting[-1] += 1
        self._emit("enter_loop", loop)

    def leave_For(self, node: cst.For) -> None:
        loop = self.loop_stack.pop()
        self.nesting[-1] -= 1
        self._emit("leave_loop", loop)

    def _nest(self, node: cst.CSTNode) -> None:
        self.nesting[-1] += 1

    def _unnest(self, node: cst.CSTNode) -> None:
        self.nesting[-1] -= 1

    visit_With = visit_Try = _nest
    leave_With = leave_Try = _unnest

    def visit_While(self, node: cst.While) -> None:
        self._whiles.append(node)
        self._nest(node)

    def leave_While(self, node: cst.While) -> None:
        self._whiles.pop()
        self._unnest(node)

    def visit_If(self, node: cst.If) -> None:
        self.nesting[-1] += 1
        self.branches.enter_if(node)

    def visit_Else(self, node: cst.Else) -> None:
        self.branches.enter_else(node)

    def leave_If(self, node: cst.If) -> None:
        self.branches.leave_if(node)
        self.nesting[-1] -= 1

    # -- assignments ----------------------------------------------------------------------
    def _loop_ids_now(self) -> tuple[int, ...]:
        return tuple(x.id for x in self.loop_stack)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = self.value(node.value)
        deps, names = self.ev.deps_of(node.value)
        for t in node.targets:
            self._assign(node, t.target, node.value, value, deps, names, "bind", None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            value = self.value(node.value)
            deps, names = self.ev.deps_of(node.value)
            self._assign(node, node.target, node.value, value, deps, names, "bind", None)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        value = self.value(node.value)
        deps, names = self.ev.deps_of(node.value)
        op = type(node.operator).__name__
        self._assign(node, node.target, node.value, value, deps, names, "aug", op)

    def _assign(self, stmt, target, value_node, value, deps, names, kind, op) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            vals = value if isinstance(value, tuple) and len(value) == len(target.elements) else (None,) * len(target.elements)
            for el, v in zip(target.elements, vals):
                self._assign(stmt, el.value, value_node, v, deps, names, kind, op)
            return
        sub = isinstance(target, cst.Subscript)
        root = _root_name(target)
        prior = self.lookup(root) if root else None
        index_deps: frozenset[int] = frozenset()
        if sub:
            for el in target.slice:  # type: ignore[union-attr]
                index_deps |= self.ev.deps_of(el.slice)[0]
            index_deps |= self.ev.deps_of(target.value)[0]  # type: ignore[union-attr]
            kind = "store" if kind == "bind" else kind
        start, end = self.lines(stmt)
        info = AssignInfo(
            stmt, kind, root, value_node, value, deps, names, index_deps, sub, op, start, end,
            tuple(self.loop_stack), self.function, prior.value if prior else None,
            prior.def_loops if prior else None,
        )
        if isinstance(target, cst.Name):
            if kind == "aug" and prior is not None:
                new_val = prior.value
                deps = deps | prior.deps
            else:
                new_val = value
            self.scopes[-1][target.value] = Binding(new_val, deps, names, self._loop_ids_now(), value_node)
        if self.function is not None:
            self.function.assigns.append(info)
        for loop in self.loop_stack:
            loop.assigns.append(info)
        self._emit("on_assign", info)

    # -- calls ----------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if self._suppress:
            return
        # a call in a branch the task's values rule out is never traced: it passes nothing to the helper
        if (isinstance(node.func, cst.Name) and node.func.value in self.helpers and self.function_stack
                and not self.branches.disabled()):
            self.helper_calls.setdefault(node.func.value, []).append(call_arguments(
                node, self.helpers[node.func.value], self.value, self.helper_defaults.get(node.func.value)))
        elif self.imported and self.function_stack and not self.branches.disabled() and _call_key(node.func) in self.imported:
            key = _call_key(node.func)
            params, defaults = self.imported[key]
            self.imported_calls.setdefault(key, []).append(call_arguments(node, params, self.value, defaults))
        elif self.objects is not None and self.function_stack and not self.branches.disabled():
            self._method_call(node)
        name = self.ev.api_name(node.func)
        if name is None or not name.startswith(("nl.", "nisa.", "nki.", "ncc.")):
            return
        value = self.value(node)
        deps, names = self.ev.deps_of(node)
        start, end = self.lines(node)
        info = CallInfo(node, name, value, start, end, tuple(self.loop_stack), self.function, deps, names,
                        self.nesting[-1])
        if name in _KEEP_OPERANDS or name in MATMUL_CALLS:
            positional = (str(i) for i in range(len(node.args)))
            info.operands = {a.keyword.value if a.keyword is not None else next(positional): v
                             for a in node.args if isinstance(v := self.value(a.value), Tensor)}
            if name in MATMUL_CALLS:
                info.matmul = matmul_operands(self, info)[:2]
        fn = self.function
        if fn is not None:
            fn.calls.append(info)
            if info.has_kw("mask"):
                fn.uses_mask = True
        for loop in self.loop_stack:
            loop.calls.append(info)
        self._emit("on_call", info)


class _ExactEngine(Engine):
    """The same engine with libcst's PositionProvider (slower; used when AstLines cannot align)."""

    METADATA_DEPENDENCIES = (PositionProvider,)
    # libcst caches the dependency set on the class; Engine's (empty) cache would be inherited.
    _INHERITED_METADATA_DEPENDENCIES_CACHE = frozenset({PositionProvider})


def _ann_base(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.value if isinstance(node, cst.Subscript) else node


def _call_key(func: cst.BaseExpression) -> str | None:
    """`f` for a call of a bare name, `m.f` for a function of an imported module."""
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return func.value.value + "." + func.attr.value
    return None


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _target_names(node: cst.BaseExpression) -> tuple[str, ...]:
    if isinstance(node, cst.Name):
        return (node.value,)
    if isinstance(node, (cst.Tuple, cst.List)):
        return tuple(n for el in node.elements for n in _target_names(el.value))
    return ()


def _trip(args: list[object]) -> int | None:
    if not args or not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return None
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    if step == 0:
        return None
    return max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))


def parse(source: str, file: str) -> cst.Module:
    too_deep = nesting_error(source, file)  # before libcst, which dies or crawls on such code (`nesting`)
    if too_deep:
        raise StaticAnalysisError(too_deep)
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        line, msg = exc.raw_line, (exc.message.splitlines() or ["invalid syntax"])[0]
        try:  # CPython's parser names the line a reader expects; libcst's may point past it
            ast.parse(source)
        except SyntaxError as py_exc:
            line, msg = py_exc.lineno or line, py_exc.msg
        raise StaticAnalysisError(f"{file}:{line}: syntax error: {msg}") from exc


def analyze(
    source: str,
    *,
    file: str = "kernel.py",
    inputs: Iterable[InputBinding] = (),
    entry: str | None = None,
    rules: Sequence[type[Rule]] | None = None,
    module: cst.Module | None = None,
    options: dict[str, object] | None = None,
    exact_positions: bool = False,
    scope: Scope | None = None,
    imported: dict[str, tuple[tuple[str, ...], dict[str, cst.BaseExpression]]] | None = None,
    callers: dict[str, list[dict[str, object]]] | None = None,
    takes_inputs: bool = True,
    records: dict[str, RecordClass] | None = None,
    objects: ObjectModel | None = None,
) -> Analysis:
    """Run the facts pass and every rule that judges this file's dialect, in one traversal.

    A helper module of the submission is analysed with the `scope` of the functions the entry reaches
    in it and `callers`: the arguments of the calls other files make to its functions, merged with
    its own calls into its parameters' values, and `takes_inputs=False`: no function of it takes the
    task's inputs (they stay task facts rules may read, `Engine.inputs`). `imported` names the
    helper-module functions this file calls (their calls are recorded in `Analysis.imported_calls`);
    `records` the submission's dataclasses by the names this file uses (`evidence.static.records`)."""
    t0 = time.perf_counter()
    module = module if module is not None else parse(source, file)
    dialect = detect(module)
    scope = scope if scope is not None else entry_scope(source, entry)
    callers = callers or {}
    active = rules_for(dialect.dialect, tuple(rules) if rules is not None else None)
    try:
        positions: AstLines | None = None if exact_positions else AstLines(source)
    except SyntaxError:  # libcst accepts a syntax this Python's ast does not: use libcst's positions
        positions = None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    helpers, defaults = top_level_params(wrapper.module), top_level_defaults(wrapper.module)
    hinted: dict[str, dict[str, object]] = helper_hints(callers) if callers else {}

    def prepared(cls: type[Engine], hinted: dict[str, dict[str, object]]) -> Engine:
        engine = cls(file, dialect, active, list(inputs), entry, options, positions, scope, hinted)
        engine.helpers, engine.helper_defaults, engine.imported = helpers, defaults, dict(imported or {})
        engine.scan_wrappers(wrapper.module)
        engine._inputs_bound = not takes_inputs  # a helper module's functions never take the task's inputs
        engine.ev.records = dict(records or {})
        engine.objects = objects
        engine.ev.classes = objects.classes if objects is not None else {}
        return engine

    for _ in range(3):  # a helper's own calls are known once its parameters are: nested helpers need more walks
        if positions is not None:
            engine = prepared(Engine, hinted)
            engine.walk(wrapper.module)
        if positions is None or not positions.consistent():  # ast and libcst disagreed: be exact
            positions = None
            engine = prepared(_ExactEngine, hinted)
            try:
                wrapper.visit(engine)  # libcst's own recursive visit: a chain thousands deep exhausts the stack
            except RecursionError as exc:
                raise StaticAnalysisError(f"{file}:1: code nested too deep for the analysis with libcst's positions "
                                          "(the interpreter's recursion limit): not analysed") from exc
        calls = {k: callers.get(k, []) + engine.helper_calls.get(k, []) for k in callers.keys() | engine.helper_calls.keys()}
        found = helper_hints(calls)
        if found == hinted:
            break
        hinted = found
        if positions is not None:
            positions = AstLines(source)  # positions are consumed by a walk
    findings = [f for r in engine.rules if r.id not in engine._dead for f in r.findings]
    findings.sort(key=lambda f: (f.start, f.rule))
    return Analysis(file, dialect, source.count("\n") + 1, engine.functions, findings, engine.failures, engine.timings,
                    engine.skipped, entry, time.perf_counter() - t0, engine.imported_calls, engine.method_calls)


def bindings_from(inputs: Iterable[object]) -> list[InputBinding]:
    """InputBindings from `InputSpec`s or from an examples dict {name: (shape, dtype) | value}."""
    out: list[InputBinding] = []
    if isinstance(inputs, dict):
        for name, spec in inputs.items():
            if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], tuple):
                out.append(InputBinding(name, tuple(spec[0]), spec[1]))
            else:
                out.append(InputBinding(name, value=spec))  # type: ignore[arg-type]
        return out
    for spec in inputs:
        out.append(InputBinding(spec.name, tuple(spec.shape), spec.dtype, spec.value))  # type: ignore[attr-defined]
    return out


__all__ = ["Analysis", "Dtype", "Engine", "SkippedFunction", "StaticAnalysisError", "analyze", "bindings_from", "parse"]
