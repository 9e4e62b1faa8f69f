"""CUDA facts with tree-sitter (the `tree-sitter-cuda` grammar): what a migration is judged against.

One parse and one walk of the `.cu` file collect kernels and their launches, `__shared__`
arrays with sizes, barriers, atomics, warp primitives, tensor-core calls, accumulator dtypes
(e.g. float accumulation of half inputs), loops with their pattern (thread-strided, tree
reduction, serial) and threadIdx/blockIdx indexing. Nothing is compiled or executed. The facts' data model is
`cuda_model.py`, loop patterns `cuda_loops.py`, macros and `#if` `cuda_macros.py`, template
instances `cuda_templates.py`, element types and constant folding `cuda_types.py`.
"""

from __future__ import annotations

import re
from functools import cache

import tree_sitter as ts
import tree_sitter_cuda

from evidence.static.cuda_loops import WORD as _WORD
from evidence.static.cuda_lambdas import LambdaReading, blank_qualifiers, qualifier_macros
from evidence.static.cuda_loops import LoopPatterns
from evidence.static.cuda_macros import MacroReading, blank_attributes
from evidence.static.cuda_model import CudaFacts, CudaFunction, Event
from evidence.static.cuda_templates import launch_instances
from evidence.static.cuda_types import CTYPES, SIZEOF, dtype_of, eval_int, lanes_of, sizeof_bytes

SYNC = ("__syncthreads", "__syncwarp", "__threadfence", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")
WARP = ("__shfl", "__ballot_sync", "__any_sync", "__all_sync", "__activemask", "__reduce_", "__match_")
TENSOR_CORE = ("wmma::", "mma_sync", "load_matrix_sync", "store_matrix_sync", "fill_fragment", "mma.sync", "wgmma")
BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_INDEX_DTYPES = ("int32", "int64", "uint32", "uint64")
_NOT_FUNCTIONS = {"true", "false", "const", "unsigned", "signed", "typename", "class", "struct", "volatile", "void",
                  "dim3", "nullptr", "sizeof"}
# read-modify-write members of cuda::atomic / cuda::atomic_ref / std::atomic objects
_ATOMIC_METHODS = ("fetch_", "exchange", "compare_exchange")
# loads that only read through the pointer they are given
_READ_ONLY_LOADS = ("__ldg", "__ldca", "__ldcs", "__ldlu", "__ldcv", "__ld", "tex1Dfetch")
# cub's cooperative reductions and scans (BlockLoad/BlockStore move data, they combine nothing)
_CUB_COLLECTIVE = re.compile(r"\s*(?:::)?cub::((?:Block|Warp)(?:Reduce|Scan))\b")
_VECTOR_TYPE = re.compile(r"u?(char|short|int|long|longlong)[1-4]|(float|double|half|__half|bfloat16|__nv_bfloat16)[1-4]")


@cache
def _parser() -> ts.Parser:
    return ts.Parser(ts.Language(tree_sitter_cuda.language()))



class _Walker(LoopPatterns, MacroReading, LambdaReading):
    def __init__(self, src: bytes, file: str, instances: dict[str, dict[str, str]] | None = None) -> None:
        self.src, self.facts = src, CudaFacts(file)
        self.blanked: dict[int, str] = {}  # byte offset -> the qualifiers blanked there (`cuda_lambdas`)
        self.lambda_vars: dict[str, str] = {}  # variable -> the device lambda it holds
        # kernel -> {template parameter: the C type every launch of it passes} (`kern<float><<<...>>>`)
        self.instances = instances or {}
        self.tsubst: dict[str, str] = {}  # the current kernel's
        self.macros: dict[str, int | None] = {}
        # integers the current function declares once and never assigns again (`const int threads = 256;`,
        # `int block = 128;`): launch sizes; any other local of the function hides a macro of its name
        self.local_ints: dict[str, int | None] = {}
        self.macro_text: dict[str, str] = {}
        self.macro_funcs: dict[str, tuple[list[str], str]] = {}  # function-like macro -> (parameters, body)  # object-like macro -> its body (`#define FUNC_PREFIX __global__`)
        self.cub_types: dict[str, str] = {}  # `using BlockReduce = cub::BlockReduce<float, 256>` -> BlockReduce
        self.types: dict[str, str] = {}  # variable -> dtype, in the current function
        self.thread_vars: set[str] = set()  # variables derived from threadIdx (tid, lane, ...)
        self.grid_vars: set[str] = set()  # variables derived from gridDim (grid-stride steps)
        self.var_init: dict[str, str] = {}  # variable -> the expression it was declared with
        self.groups: dict[str, str] = {}  # cooperative-groups variable -> grid | tile | block
        self.fn_text = ""  # source of the current function
        self.local_arrays: set[str] = set()  # register arrays declared in the current function
        self.pointers: set[str] = set()  # pointer variables of the current function
        self.decl_depth: dict[str, int] = {}
        self.fn: CudaFunction | None = None
        self.depth = 0
        self.seen_acc: set[tuple[str, str]] = set()
        self.tparams: set[str] = set()  # template parameters of the current function
        self.type_names: set[str] = set()  # typedefs, `using` aliases and structs of the file
        self.params: dict[str, int] = {}  # parameter -> position, in the current function
        self.dim3: dict[str, int | None] = {}  # `dim3 threads(16, 8)` -> 128 threads, in the current function
        # A register tile handed to a device helper (`process(regA, regB, acc)`) accumulates in the
        # helper through a pointer parameter: (helper, position, name, line, dtype, op) of such
        # updates and (callee, position, caller) of local arrays passed, matched after the walk.
        self.param_updates: list[tuple[str, int, str, int, str, str]] = []
        self.array_args: set[tuple[str, int, str]] = set()

    def text(self, n: ts.Node) -> str:
        return self.src[n.start_byte:n.end_byte].decode(errors="replace")

    def fold(self, n: ts.Node | None) -> int | None:
        if n is None:
            return None
        t = n.type
        if t == "number_literal":
            m = re.match(r"(0x[0-9a-fA-F]+|\d+)", self.text(n))
            return int(m.group(1), 0) if m else None
        if t == "identifier":
            name = self.text(n)
            return self.local_ints[name] if name in self.local_ints else self.macros.get(name)
        if t == "sizeof_expression":
            return sizeof_bytes(self.text(n))
        if t == "parenthesized_expression":
            return self.fold(n.named_children[0]) if n.named_children else None
        if t == "binary_expression":
            a, b = self.fold(n.child_by_field_name("left")), self.fold(n.child_by_field_name("right"))
            op = self.text(n.child_by_field_name("operator")) if n.child_by_field_name("operator") else ""
            if a is None or b is None:
                return None
            ops = {"+": a + b, "-": a - b, "*": a * b, "<<": a << b if b >= 0 else None, ">>": a >> b if b >= 0 else None}
            if op in ops:
                return ops[op]
            if op in ("/", "%") and b:
                return a // b if op == "/" else a % b
        return None

    def walk(self, n: ts.Node) -> None:
        """Pre-order over the tree with the handlers, and what closes a loop or a function on the way back up;
        an explicit stack, not recursion: generated code nests expressions thousands deep."""
        stack: list[tuple[ts.Node, str]] = [(n, "")]
        while stack:
            n, leaving = stack.pop()
            if leaving:
                self._leave(n, leaving)
                continue
            t = n.type
            if t == "function_definition" and self.fn is not None and n.parent is not None and n.parent.type != "translation_unit":
                # `CUDA_KERNEL_LOOP(i, n) { ... }` inside a kernel parses as a function defined there: it is a
                # loop written through a macro, and its body is the kernel's
                self._macro_loop(n)
                stack.append((n, "macro_loop"))
                stack.extend((c, "") for c in reversed(n.children))
                continue
            if t in ("preproc_if", "preproc_elif"):
                self._preproc_branch(n)
                continue
            handler = getattr(self, "on_" + t, None)
            if handler is not None and handler(n) is False:
                continue
            stack.append((n, "node"))
            stack.extend((c, "") for c in reversed(n.children))

    def _leave(self, n: ts.Node, what: str) -> None:
        t = n.type
        if what == "macro_loop" or t in ("for_statement", "while_statement", "do_statement"):
            self.depth -= 1
        elif t == "function_definition" and self.fn is not None:
            # pointers the function only reads: its inputs when it marks none `const`
            self.fn.read_only_dtypes = tuple(d for p, d in self.pointer_params.items() if p not in self.written)
            self.fn = None

    # -- handlers -------------------------------------------------------------------------
    def on_function_definition(self, n: ts.Node) -> None:
        decl = n.child_by_field_name("declarator")
        head = self.src[n.start_byte:decl.start_byte if decl else n.start_byte].decode(errors="replace")
        # a qualifier spelled through a macro (generated code's `#define FUNC_PREFIX __global__`)
        head = " ".join(self.macro_text.get(w, w) for w in _WORD.findall(head))
        # and one blanked before parsing (`DEVICE_FN float f(...)`, a macro of an included header): the
        # function's node starts after the blank
        head += " " + self.qualifiers_between(n.prev_sibling.end_byte if n.prev_sibling is not None else 0,
                                              decl.start_byte if decl else n.start_byte)
        qual = "global" if "__global__" in head else "device" if "__device__" in head else "host"
        name_node = decl.child_by_field_name("declarator") if decl is not None else None
        name = self.text(name_node) if name_node is not None else "?"
        if decl is not None and decl.type == "operator_cast":  # `operator T *()` of a helper struct
            name = " ".join(self.text(decl).split())
        owner = n.parent
        while owner is not None and owner.type not in ("struct_specifier", "class_specifier", "translation_unit"):
            owner = owner.parent
        if owner is not None and owner.type != "translation_unit" and owner.child_by_field_name("name") is not None:
            # Member functions are named Struct::member so a kernel that uses the struct reaches them.
            name = f"{self.text(owner.child_by_field_name('name'))}::{name}"
        self.types, self.thread_vars, self.grid_vars, self.var_init, self.groups = {}, set(), set(), {}, {}
        tdecl = n.parent if n.parent is not None and n.parent.type == "template_declaration" else None
        tlist = tdecl.child_by_field_name("parameters") if tdecl is not None else None
        tnames = [w[-1] for p in (tlist.named_children if tlist is not None else ())
                  if (w := _WORD.findall(self.text(p).split("=")[0]))]
        self.facts.template_params[name] = tuple(tnames)
        # a template parameter every launch sets to one C type is that type in the kernel's body
        self.tsubst = {t: c for t, c in self.instances.get(name, {}).items() if t in tnames}
        self.tparams = set(tnames) - self.tsubst.keys()
        self.pointers: set[str] = set()  # pointer variables: `p += n` moves them, it sums nothing
        self.decl_depth: dict[str, int] = {}  # local variable -> loop depth of its declaration
        inputs, pointers = [], []
        self.params, self.dim3 = {}, {}
        self.pointer_params: dict[str, str] = {}  # pointer parameter -> element dtype ("?" unknown)
        self.aliases: dict[str, set[str]] = {}  # local pointer -> the pointer parameters it was derived from
        self.written: set[str] = set()  # pointer parameters written through (or handed to a call that may)
        params = decl.child_by_field_name("parameters") if decl is not None else None
        for i, p in enumerate(params.named_children if params is not None else ()):
            ptext = self.text(p)
            dtype = self._dtype(ptext)
            pname = re.findall(r"[A-Za-z_]\w*", ptext)
            if pname:
                self.params[pname[-1]] = i
                self.types[pname[-1]] = dtype or ""
                self._note_group(pname[-1], ptext)
                if "*" in ptext or "[" in ptext:
                    self.pointers.add(pname[-1])
            if "*" in ptext:
                pointers.append(dtype or "?")
                if pname:
                    self.pointer_params[pname[-1]] = dtype or "?"
                if "const" in ptext.split("*")[0]:
                    inputs.append(dtype or "?")
        self.fn_text = self.text(n)
        self.local_ints = dict.fromkeys(self.params)  # a parameter is no compile-time constant
        # a template integer every launch passes (`kern<256><<<...>>>`) is that integer
        self.local_ints.update({t: int(v) for t, v in self.tsubst.items() if v.isdigit()})
        self.local_arrays = set()
        self.fn = CudaFunction(name, qual, n.start_point[0] + 1, n.end_point[0] + 1, tuple(inputs), tuple(pointers))
        self.facts.functions.append(self.fn)

    def on_declaration(self, n: ts.Node) -> None:
        text = self.text(n)
        if self.fn is None and re.match(r"\s*(static\s+)?(constexpr|const)\b", text):
            for d in n.named_children:  # file-scope `constexpr int THREADS = 256;` folds like a macro
                if d.type == "init_declarator" and d.child_by_field_name("declarator") is not None:
                    self._define(self.text(d.child_by_field_name("declarator")), self.fold(d.child_by_field_name("value")))
        dtype = self._dtype(text.split("=")[0])
        type_node = n.child_by_field_name("type")
        if dtype is None and type_node is not None and set(_WORD.findall(self.text(type_node))) & self.tparams:
            dtype = "?"  # `acc_t s = 0` in a template<typename scalar_t, typename acc_t>: a type only its launch knows
        if self.fn is not None and re.match(r"\s*(const\s+)?dim3\b", text):
            for d in n.named_children:
                if d.type == "init_declarator" and d.child_by_field_name("declarator") is not None:
                    self.dim3[self.text(d.child_by_field_name("declarator"))] = self._dim3_size(d.child_by_field_name("value"))
                elif d.type == "function_declarator" and d.child_by_field_name("declarator") is not None:
                    # `dim3 threads(TILE, ROWS);` with bare names parses as a function declaration
                    # (C++'s most vexing parse): its "parameter types" are the sizes.
                    params = d.child_by_field_name("parameters")
                    known = {**self.macros, **self.local_ints}
                    sizes = [eval_int(self.text(c), known) for c in (params.named_children if params else ())]
                    total = 1
                    for v in sizes:
                        total = total * v if total is not None and v is not None else None
                    self.dim3[self.text(d.child_by_field_name("declarator"))] = total if sizes else None
        if self.fn is not None:
            self._note_local_ints(n, dtype)
        for d in n.named_children:
            if d.type in ("init_declarator", "identifier", "array_declarator", "pointer_declarator"):
                # `half2 v(0.f, 0.f)` constructs v: the name is the declarator's, not the last word
                target = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
                names = re.findall(r"[A-Za-z_]\w*", self.text(target if target is not None else d).split("=")[0].split("[")[0])
                if names:
                    self.types[names[-1]] = dtype or ""
                    self.decl_depth[names[-1]] = self.depth
                    if d.type == "pointer_declarator" or (d.type == "init_declarator" and d.child_by_field_name(
                            "declarator") is not None and d.child_by_field_name("declarator").type == "pointer_declarator"):
                        self.pointers.add(names[-1])
                    self._note_group(names[-1], text.split("=")[0] + " " + self.text(d).split("=", 1)[-1])
                    if d.type == "init_declarator":
                        value = self.text(d).split("=", 1)[-1]
                        self.var_init[names[-1]] = value
                        if self.fn is not None and names[-1] in self.pointers:  # `float* row = out + i * C`
                            self.aliases[names[-1]] = self._pointer_params_in(value)
                        used = set(_WORD.findall(value))
                        if any(b in value for b in ("threadIdx", "laneid", "thread_rank()")) or self.thread_vars & used:
                            self.thread_vars.add(names[-1])
                        if "gridDim" in value or self.grid_vars & used:
                            self.grid_vars.add(names[-1])
        if self.fn is not None and not re.search(r"__shared__|\bextern\b|\bstatic\b|__constant__", text):
            self.local_arrays.update(self.text(d.child_by_field_name("declarator")).split("[")[0].strip()
                                     for d in n.named_children if d.type == "array_declarator"
                                     and d.child_by_field_name("declarator") is not None)
            self.local_arrays.update(self.text(d.child_by_field_name("declarator")).split("[")[0].strip()
                                     for d in n.named_children if d.type == "init_declarator"
                                     and d.child_by_field_name("declarator") is not None
                                     and d.child_by_field_name("declarator").type == "array_declarator")
        if "__shared__" in text and self.fn is not None:
            arr = next((d for d in n.named_children if d.type == "array_declarator"), None)
            dims = []
            node = arr
            while node is not None and node.type == "array_declarator":
                size = node.child_by_field_name("size")
                dims.insert(0, self.fold(size) if size is not None else None)
                node = node.child_by_field_name("declarator")
            name = self.text(node) if node is not None else re.findall(r"[A-Za-z_]\w*", text.split(";")[0])[-1]
            elems = 1
            for d in dims:
                elems = elems * d if elems is not None and d is not None else None
            size = SIZEOF.get(dtype or "")
            # a `__shared__ half2 v[128]` holds 256 halves: 512 bytes, not 256
            nbytes = elems * size * lanes_of(text.split("=")[0]) if elems is not None and size else None
            self.facts.shared.append(Event(name, self.fn.name, n.start_point[0] + 1, labels={
                "dtype": dtype or "?", "dims": "x".join("?" if d is None else str(d) for d in dims) or "scalar",
                "dynamic": str("extern" in text and not all(dims)).lower()}, value=nbytes))

    def _dtype(self, text: str) -> str | None:
        """The dtype a declaration names, a template parameter read as the type its launches pass."""
        return dtype_of(" ".join(self.tsubst.get(w, w) for w in _WORD.findall(text)) if self.tsubst else text)

    def _note_local_ints(self, n: ts.Node, dtype: str | None) -> None:
        """A local integer initialised with a constant expression and never assigned again in its
        function folds like a macro; every other local hides a macro or outer constant of its name."""
        for d in n.named_children:
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if target is None or target.type != "identifier":
                words = _WORD.findall(self.text(target)) if target is not None else []
                self.local_ints.update(dict.fromkeys(words[:1]))  # `a[N]`, `*p`: the name comes first
                continue
            name = self.text(target)
            value = self.fold(d.child_by_field_name("value")) if d.type == "init_declarator" else None
            writes = len(re.findall(rf"(?<![\w.>]){re.escape(name)}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                                    rf"(?:\+\+|--)\s*{re.escape(name)}\b|\b{re.escape(name)}\s*(?:\+\+|--)", self.fn_text))
            integer = dtype is not None and dtype.startswith(("int", "uint"))
            self.local_ints[name] = value if integer and writes == 1 else None

    def on_type_definition(self, n: ts.Node) -> None:
        for d in n.children_by_field_name("declarator"):
            self.type_names.update(_WORD.findall(self.text(d))[-1:])
            self._note_cub(_WORD.findall(self.text(d))[-1:], n.child_by_field_name("type"))

    def on_alias_declaration(self, n: ts.Node) -> None:
        if (name := n.child_by_field_name("name")) is not None:
            self.type_names.add(self.text(name))
            self._note_cub([self.text(name)], n.child_by_field_name("type"))

    def _note_cub(self, names: list[str], aliased: ts.Node | None) -> None:
        """`using R = cub::BlockReduce<float, 256>;` / `typedef cub::WarpReduce<float> R;`: R names a cub collective."""
        m = _CUB_COLLECTIVE.match(self.text(aliased)) if aliased is not None else None
        if m and names:
            self.cub_types[names[0]] = m.group(1)

    def _atomic_object_op(self, name: str) -> str | None:
        """`ref.fetch_add(v)` on a libcu++/std atomic (`cuda::atomic_ref<float, scope> ref(*out);`,
        `cuda::atomic<int> n`): `cuda::atomic_ref.fetch_add`. (Template declarations with several
        arguments may not parse as declarations, so the variable's type is found in the text.)"""
        var, dot, method = name.rpartition(".")
        if not dot or not re.fullmatch(r"[A-Za-z_]\w*", var) or not method.startswith(_ATOMIC_METHODS):
            return None
        m = re.search(rf"\b((?:cuda::|std::|cuda::std::)?atomic(?:_ref)?)\s*<[^;{{}}]*>\s*&?\s*{re.escape(var)}\b", self.fn_text)
        return f"{m.group(1)}.{method}" if m else None

    def _cub_collective(self, name: str) -> str | None:
        """`R(temp).Sum` (R a cub alias) or `cub::WarpReduce<float>(temp).Reduce`: cub::<class>::<method>."""
        base, dot, method = name.rpartition(").")
        if not dot or not re.fullmatch(r"\w+", method):
            return None
        callee = base.split("(")[0].strip()
        cls = self.cub_types.get(callee.split("<")[0].strip())
        if cls is None and (m := _CUB_COLLECTIVE.match(callee)):
            cls = m.group(1)
        return f"cub::{cls}::{method}" if cls else None

    def on_struct_specifier(self, n: ts.Node) -> None:
        if (name := n.child_by_field_name("name")) is not None:
            self.type_names.add(self.text(name).split("<")[0])

    def _dim3_size(self, n: ts.Node | None) -> int | None:
        """Threads in a block written as a dim3: `(16, 8)`, `dim3(16, 8)`, `{16, 8}` -> 128; a
        dim3 variable of this function; else the folded integer."""
        if n is None:
            return None
        if n.type == "identifier" and self.text(n) in self.dim3:
            return self.dim3[self.text(n)]
        if n.type == "call_expression" and self.text(n.child_by_field_name("function") or n) == "dim3":
            n = n.child_by_field_name("arguments")
        if n is not None and n.type in ("argument_list", "initializer_list"):
            sizes = [self.fold(c) for c in n.named_children if c.type != "comment"]
            if not sizes or None in sizes:
                return None
            total = 1
            for v in sizes:
                total *= v
            return total
        return self.fold(n)

    def on_field_expression(self, n: ts.Node) -> bool:
        text = self.text(n)
        base = text.split(".")[0]
        if base in BUILTINS and self.fn is not None:
            self.fn.builtins[text] += 1
        return True

    def on_call_expression(self, n: ts.Node) -> bool | None:
        fn_node = n.child_by_field_name("function")
        # `::atomicAdd(...)` names the global-namespace function
        name = (self.text(fn_node) if fn_node is not None else "").removeprefix("::")
        if not self._device() and name in self.macro_funcs and self.macro_launch(n, name):
            return False
        line = n.start_point[0] + 1
        where = self.fn.name if self.fn else ""
        if self._device():
            # Host code is never reached from a kernel, and llm.c names a kernel's launcher after
            # the kernel (`void gelu_backward1(...)` launches `__global__ gelu_backward1`): the
            # launcher's calls must not read as the kernel's.
            callee, _, targs = name.partition("<")
            calls = self.facts.calls.setdefault(self.fn.name.split("<")[0], set())
            # A call through a template parameter (`warp_reduction(v)` in a template<reduction_func_t
            # warp_reduction>) calls whatever the instantiation passed: that argument is the callee.
            # So does a call through a parameter (`f(i)` in a `for_each(int n, F f)`): the launch names what it passes.
            if callee.strip() not in self.tparams and callee.strip() not in self.params:
                calls.add(callee.strip())
            if targs and not callee.strip().endswith("_cast"):
                # `blockReduce<warpReduceMax>(v)` runs warpReduceMax too: function names passed as
                # template arguments are calls of this function (types and constants are not).
                calls.update(w for w in _WORD.findall(targs) if w not in _NOT_FUNCTIONS and w not in CTYPES
                             and w not in self.tparams and w not in self.macros and w not in self.type_names
                             and w not in self.types
                             and not _VECTOR_TYPE.fullmatch(w))
        args_node = n.child_by_field_name("arguments")
        if self._device() and args_node is not None:
            # a pointer handed to an atomic, or to any call but a read-only load, may be written there
            for i, a in enumerate(args_node.named_children):
                # (an element `x[i]` or a call's result is a value; the inner call's own arguments are its own)
                if a.type not in ("subscript_expression", "call_expression") and not name.startswith(_READ_ONLY_LOADS) and (
                        i == 0 or not name.startswith("atomic")):
                    self.written |= self._pointer_params_in(self.text(a))
            for i, a in enumerate(args_node.named_children):
                if a.type == "identifier" and self.text(a) in self.local_arrays:
                    self.array_args.add((name.split("<")[0].strip().rsplit("::", 1)[-1], i, self.fn.name))
        kcall = next((c for c in n.children if c.type == "kernel_call_syntax"), None)
        if kcall is not None:
            args = [c for c in kcall.named_children]
            grid, block = (self.text(args[0]) if args else "?"), (self.text(args[1]) if len(args) > 1 else "?")
            # `kern<float, 256><<<g, b>>>` launches the template `kern`: the launch names the kernel
            # without its template arguments (kept as a label) so it matches the definition.
            kernel, _, targs = name.partition("<")
            labels = {"grid": grid, "block": block, "shared_bytes": self.text(args[2]) if len(args) > 2 else "0"}
            if targs:
                labels["template_args"] = "<" + targs
            self.facts.launches.append(Event(kernel.strip().rsplit("::", 1)[-1], where, line, labels=labels,
                                             value=self._dim3_size(args[1]) if len(args) > 1 else None))
            # a device lambda the launch passes (`for_each<<<g, b>>>(n, [=] __device__ (int i) {...})`) runs there
            for lam in self.lambdas_passed(n.child_by_field_name("arguments")):
                self.facts.calls.setdefault(kernel.strip().rsplit("::", 1)[-1], set()).add(lam)
        elif name in ("cudaLaunchCooperativeKernel", "cudaLaunchKernel") and args_node is not None \
                and len(args_node.named_children) >= 3:
            # The runtime-API launch (a cooperative launch is the only way to grid.sync()):
            # (kernel, grid, block, args[, shared bytes[, stream]]).
            a = args_node.named_children
            kernel = (_WORD.findall(self.text(a[0])) or ["?"])[-1]
            self.facts.launches.append(Event(kernel, where, line, labels={
                "grid": self.text(a[1]), "block": self.text(a[2]), "shared_bytes": self.text(a[4]) if len(a) > 4 else "0"},
                value=self._dim3_size(a[2])))
        elif not self._device():
            return  # host code: its barriers, atomics (C11 atomic_*) and collectives are no kernel's
        elif (scope := self._sync_scope(n, name)) is not None:
            if scope == "grid":
                self.facts.other_idioms.append(Event("grid_sync", where, line))
            else:
                self.facts.syncs.append(Event(name, where, line, labels={"scope": scope}))
        elif name.startswith("atomic"):
            self.facts.atomics.append(Event(name, where, line))
        elif (op := self._atomic_object_op(name)) is not None:
            self.facts.atomics.append(Event(op, where, line))
        elif name.startswith(WARP) or self._cg_collective(name):
            self.facts.warp.append(Event(name, where, line))
        elif (collective := self._cub_collective(name)) is not None:
            # cub's block/warp reductions and scans are shuffles (and, block-wide, shared memory) inside
            self.facts.warp.append(Event(collective, where, line))
        elif any(k in name for k in TENSOR_CORE):
            self.facts.tensor_core.append(Event(name, where, line))
            if name.rsplit("::", 1)[-1] == "mma_sync":
                self._mma_accumulator(n, line)
        elif name in ("printf", "malloc", "free", "cudaMalloc") or name.endswith("this_grid"):
            self.facts.other_idioms.append(Event(name, where, line))

    def _mma_accumulator(self, n: ts.Node, line: int) -> None:
        """`mma_sync(d, a, b, c)` accumulates into the wmma accumulator fragment `d`: its element
        type is the accumulation dtype and the matrix_a fragment's the input dtype. (Fragment
        declarations are templates tree-sitter may misread, so they are found in the text.)"""
        args = n.child_by_field_name("arguments")
        names = [_WORD.match(self.text(a)) for a in (args.named_children if args is not None else ())]
        if len(names) < 2 or not names[0] or not names[1] or self.fn is None:
            return
        acc, a = names[0].group(0), names[1].group(0)

        def fragment_dtype(var: str, use: str) -> str | None:
            # wmma::fragment<Use, m, n, k, T[, Layout]> var: T is the fifth template argument.
            m = re.search(rf"fragment\s*<([^<>;{{}}]*)>\s*{re.escape(var)}\b", self.fn_text)
            targs = [t.strip() for t in m.group(1).split(",")] if m else []
            if len(targs) < 5 or not targs[0].endswith(use):
                return None
            # wmma::precision::tf32 operands are float storage the tensor cores round to tf32 (10-bit
            # mantissa): the input precision is tfloat32, not float32.
            return {"tf32": "tfloat32"}.get(targs[4].rsplit("::", 1)[-1]) or CTYPES.get(targs[4].rsplit("::", 1)[-1])

        acc_dtype = fragment_dtype(acc, "accumulator")
        if acc_dtype is None or (self.fn.name, acc) in self.seen_acc:
            return
        self.seen_acc.add((self.fn.name, acc))
        labels = {"accumulator_dtype": acc_dtype, "op": "mma_sync"}
        if (in_dtype := fragment_dtype(a, "matrix_a")) is not None:
            labels["input_dtype"] = in_dtype
        self.facts.accumulators.append(Event(acc, self.fn.name, line, labels=labels))

    def _group_of(self, var: str) -> str:
        """The cooperative-groups kind of a variable: grid, tile (a warp or sub-warp), block or ''."""
        if var not in self.groups and self.fn_text and re.fullmatch(r"[A-Za-z_]\w*", var):
            # tree-sitter reads `cg::thread_block_tile<32> t = cg::tiled_partition<32>(b);` as a
            # comparison expression, not a declaration: find the declaration in the text instead.
            v = re.escape(var)
            m = re.search(rf"([\w:<>, ]+?)\s+{v}\s*=\s*([^;]*);", self.fn_text) or re.search(
                rf"([\w:<>, ]*(?:grid_group|thread_block\w*|coalesced_group)[\w:<>, ]*)\s+{v}\b", self.fn_text)
            if m:
                self._note_group(var, " ".join(m.groups()))
        return self.groups.get(var, "")

    def _sync_scope(self, n: ts.Node, name: str) -> str | None:
        """block | warp | fence | grid for a barrier/fence call, None for any other call.

        Cooperative groups spell barriers `cg::sync(g)` and `g.sync()`; what they wait for depends
        on the group: a thread_block is a block barrier like __syncthreads(), a tile a warp-level
        sync, a grid_group a grid-wide barrier."""
        if name.startswith("__threadfence"):
            return "fence"
        if name.startswith("__syncwarp"):
            return "warp"
        if name.startswith(SYNC):
            return "block"
        if name.rsplit("::", 1)[-1] == "sync" and "::" in name:  # cg::sync(g), cooperative_groups::sync(g)
            args = n.child_by_field_name("arguments")
            group = self.text(args.named_children[0]) if args is not None and args.named_children else ""
        elif name.endswith(".sync"):  # g.sync()
            group = name[:-len(".sync")]
        else:
            return None
        kind = self._group_of(group) or ("grid" if "grid" in group.lower() else "block")
        return {"tile": "warp"}.get(kind, kind)

    def _cg_collective(self, name: str) -> bool:
        """A cooperative-groups warp/tile collective: tile.shfl_*(), tile.ballot/any/all/match_*(),
        cg::reduce / cg::inclusive_scan / cg::exclusive_scan."""
        if re.fullmatch(r"(cg|cooperative_groups)::(reduce|inclusive_scan|exclusive_scan)", name):
            return True
        obj, _, member = name.rpartition(".")
        if not obj:
            return False
        if member in ("shfl", "shfl_down", "shfl_up", "shfl_xor"):
            return True
        return member in ("ballot", "any", "all", "match_any", "match_all") and self._group_of(obj) == "tile"

    def _note_group(self, var: str, text: str) -> None:
        """Remember a cooperative-groups variable's kind from its declaration."""
        if re.search(r"grid_group|this_grid\(", text):
            self.groups[var] = "grid"
        elif re.search(r"thread_block_tile|tiled_partition|coalesced_group|coalesced_threads\(", text):
            self.groups[var] = "tile"
        elif re.search(r"thread_block\b|this_thread_block\(", text):
            self.groups[var] = "block"

    _PTX_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "tf32": "tfloat32",
                   "s32": "int32", "s8": "int8", "u8": "uint8", "e4m3": "float8_e4m3", "e5m2": "float8_e5m2"}

    def on_gnu_asm_expression(self, n: ts.Node) -> bool:
        """Inline PTX: tensor-core MMAs, barriers, shuffles, votes and atomics written as asm."""
        if not self._device():
            return False
        text = "".join(self.text(c) for c in n.children if c.type in ("string_literal", "concatenated_string"))
        where, line = self.fn.name if self.fn else "", n.start_point[0] + 1
        for m in re.finditer(r"\b(w?mma\.sync|wgmma\.\w+|ldmatrix|bar\.sync|barrier\.sync|bar\.warp\.sync|membar|fence\.\w+|"
                             r"shfl\.sync|vote\.sync|redux\.sync|atom\.\w+|red\.\w+)((?:\.\w+)*)", text):
            op, suffix = m.group(1), m.group(2)
            if op.startswith(("mma", "wmma", "wgmma", "ldmatrix")):
                self.facts.tensor_core.append(Event("asm:" + op, where, line))
                types = [self._PTX_DTYPES[t] for t in suffix.split(".") if t in self._PTX_DTYPES]
                # mma.sync...dtype.atype.btype.ctype: D (the accumulator) first, A second.
                if op in ("mma.sync", "wmma.mma.sync") and len(types) >= 2 and (where, "asm:mma") not in self.seen_acc:
                    self.seen_acc.add((where, "asm:mma"))
                    self.facts.accumulators.append(Event("mma.sync", where, line, labels={
                        "accumulator_dtype": types[0], "op": "asm mma.sync", "input_dtype": types[1]}))
            elif op.startswith(("bar", "barrier")):
                self.facts.syncs.append(Event("asm:" + op, where, line, labels={"scope": "warp" if "warp" in op else "block"}))
            elif op.startswith(("membar", "fence")):
                self.facts.syncs.append(Event("asm:" + op, where, line, labels={"scope": "fence"}))
            elif op.startswith(("shfl", "vote", "redux")):
                self.facts.warp.append(Event("asm:" + op, where, line))
            else:
                self.facts.atomics.append(Event("asm:" + op, where, line))
        return False

    def _device(self) -> bool:
        """Inside a __global__/__device__ function. Host functions (launchers, CPU references, main)
        are not the kernel: their loops and sums say nothing about how the GPU code is built."""
        return self.fn is not None and self.fn.qualifier != "host"

    def _pointer_params_in(self, text: str) -> set[str]:
        """The pointer parameters an expression names, directly or through local pointers derived from them."""
        words = set(_WORD.findall(text))
        return (words & self.pointer_params.keys()).union(*(self.aliases.get(w, set()) for w in words))

    def on_assignment_expression(self, n: ts.Node) -> None:
        if not self._device():
            return
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if left is not None and left.type != "identifier":  # `out[i] = ...`, `*p = ...`, `((float4*)out)[i] = ...`
            self.written |= self._pointer_params_in(self.text(left))
        elif left is not None and right is not None and self.text(left) in self.pointers:
            self.aliases.setdefault(self.text(left), set()).update(self._pointer_params_in(self.text(right)))
        op_node = n.child_by_field_name("operator")
        op = self.text(op_node) if op_node is not None else "="
        subscripted = left is not None and left.type == "subscript_expression"
        if subscripted:
            # A register tile (`float acc[4][4]` local to the function) accumulates element-wise;
            # __shared__ arrays and pointers into global memory are not accumulators.
            base = left
            while base.type == "subscript_expression" and base.child_by_field_name("argument") is not None:
                base = base.child_by_field_name("argument")
            if base.type == "identifier" and self.text(base) in self.params and self.fn.qualifier == "device" \
                    and op in ("+=", "-=") and self.depth > 0:
                self.param_updates.append((self.fn.name, self.params[self.text(base)], self.text(base),
                                           n.start_point[0] + 1, self.types.get(self.text(base), ""), op))
            if base.type != "identifier" or self.text(base) not in self.local_arrays:
                if op in ("+=", "-=", "*=") and self.depth > 0:
                    self.facts.memory_updates.append(Event(self.text(base), self.fn.name, n.start_point[0] + 1))
                return
            left = base
        if left is None or left.type != "identifier" or right is None:
            return
        name = self.text(left)
        rtext = self.text(right)
        reads_self = name in re.findall(r"[A-Za-z_]\w*", rtext)
        # `v = __hfma2(a, b, v)`, `acc = fmaf(x, y, acc)`: fused multiply-adds and half/bf16 add
        # intrinsics update their argument as much as `acc += x * y` does.
        is_update = op in ("+=", "-=", "*=") or (op == "=" and reads_self and re.search(
            r"\b(fmaxf|fminf|max|min|fmax|fmin|fmaf?|__fmaf?_r\w|__fadd_r\w|__h(add|fma|max|min)2?(_\w+)?)\b|\+", rtext))
        if not is_update or (self.depth == 0 and op == "="):
            return
        if self.depth <= self.decl_depth.get(name, 0):
            # Declared in the loop body it is updated in (or updated outside any loop): a
            # per-iteration value such as AdamW's `param -= lr * ...`, not a loop-carried sum.
            return
        dtype = self.types.get(name, "")
        if name in self.pointers and not subscripted:
            return
        if not dtype.startswith(("float", "bfloat", "?")) or (self.fn.name, name) in self.seen_acc:
            return
        self.seen_acc.add((self.fn.name, name))
        self.facts.accumulators.append(Event(name, self.fn.name, n.start_point[0] + 1,
                                             labels={"accumulator_dtype": "unknown" if dtype == "?" else dtype, "op": op}))


def _error_spans(root: ts.Node) -> list[tuple[int, int]]:
    """1-based line spans of ERROR and MISSING nodes, merged when they touch."""
    spans: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            spans.append((n.start_point[0] + 1, n.end_point[0] + 1))
        elif n.has_error:
            stack.extend(n.children)
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def parse_cuda(source: str, file: str = "kernel.cu", headers: dict[str, str] | None = None) -> CudaFacts:
    """The facts of one `.cu` file; `headers` (path -> text) are the submission's headers, whose macros the
    file sees where it `#include`s them (their code is not read)."""
    seed = _Walker(b"", file)
    seed.read_headers(source, headers or {}, _parser())
    src = blank_attributes(source.encode())
    src, blanked = blank_qualifiers(src, qualifier_macros(src, seed.macro_text))
    tree = _parser().parse(src)
    w = _Walker(src, file)
    w.seed(seed)
    w.blanked = blanked
    w.walk(tree.root_node)
    instances = launch_instances(w.facts)
    if instances:  # read the kernels again with the types their launches instantiate
        w = _Walker(src, file, instances)
        w.seed(seed)
        w.blanked = blanked
        w.walk(tree.root_node)
    facts = w.facts
    facts.type_names = set(w.type_names)
    # A call of a helper this file defines (llm.c's `atomicAddX(&dbias[i], v)` wrapping atomicAdd)
    # is not itself an atomic primitive: the helper's own atomics are counted where they are.
    defined = {f.name.split("<")[0] for f in facts.functions}
    facts.atomics = [e for e in facts.atomics if e.what not in defined]
    for helper, pos, name, line, dtype, op in w.param_updates:
        # `acc[i] += a * b` through a pointer parameter is a loop accumulator when a caller passes
        # its own register array there (SGEMM kernels keep the C tile in registers and update it
        # in a processFromSmem helper); a global or shared pointer there is a store, not a sum.
        callers = sorted(c for h, i, c in w.array_args if h == helper.split("<")[0].rsplit("::", 1)[-1] and i == pos)
        if callers and dtype.startswith(("float", "bfloat")) and (helper, name) not in w.seen_acc:
            w.seen_acc.add((helper, name))
            facts.accumulators.append(Event(name, helper, line, labels={
                "accumulator_dtype": dtype, "op": op, "register_array_of": callers[0]}))
    # Where the grammar gave up (a kernel defined through a macro, unbalanced braces, a truncated
    # file), facts may be missing: the spans are kept so items and verdicts can say so.
    if tree.root_node.has_error:
        facts.parse_errors = _error_spans(tree.root_node)
    # An accumulator's input dtype is its own function's (const pointer parameters, else the one dtype
    # of the pointers it only reads: many kernels mark nothing const, else the one dtype all its
    # pointer parameters share: benchmark kernels take `float* inp`), else that of the
    # kernels that reach the helper it sits in; never the first kernel of a file with several.
    by_name = {fn.name: fn for fn in facts.functions}

    def own(fn: CudaFunction | None) -> str | None:
        """The dtype a float accumulator of `fn` sums, "unknown" when a candidate input's element
        type is a template parameter or typedef, None when `fn` has no pointer inputs to say."""
        if fn is None:
            return None
        for dtypes, one in ((fn.input_dtypes, False), (fn.read_only_dtypes, True), (fn.pointer_dtypes, True)):
            # Integer index arrays (token ids, targets, offsets) are not what a float sum reads
            # when the function has other inputs: `const int* targets` beside `const floatX* x`.
            data = [d for d in dtypes if d not in _INDEX_DTYPES] or list(dtypes)
            if not data or (one and len(set(data)) != 1):
                continue
            return "unknown" if "?" in data else data[0]
        return None

    for acc in facts.accumulators:
        if "input_dtype" in acc.labels:  # an mma_sync's matrix_a fragment type
            continue
        dtype = own(by_name.get(acc.function))
        if dtype is None:
            callers = {own(k) for k in facts.kernels if acc.function in facts.reachable([k.name])} - {None}
            dtype = callers.pop() if len(callers) == 1 else None
        acc.labels["input_dtype"] = dtype or "unknown"
    for k in facts.kernels:
        body = src.decode(errors="replace").splitlines()[k.start - 1:k.end]
        k.global_index = any(re.search(r"blockIdx\.\w\s*\*\s*blockDim\.\w|blockDim\.\w\s*\*\s*blockIdx\.\w", ln) for ln in body)
    return facts
