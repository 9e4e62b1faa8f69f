"""How the CUDA reader sees the preprocessor: `#define` integers and text (a kernel qualifier spelled through a
macro, in the file or in a header of the submission it includes), function-like macros (a loop written
`CUDA_KERNEL_LOOP(i, n) { ... }`, a launch written `LAUNCH(kern, grid, block, args)`), `#if` branches the file's
own integers decide, and compiler attributes the grammar does not know. A mixin of the CUDA reader's walker
(evidence.static.cuda), which keeps the macro tables, the function being walked and the loop depth."""

from __future__ import annotations

import posixpath
import re

import tree_sitter as ts

from evidence.static.cuda_loops import WORD
from evidence.static.cuda_model import Event
from evidence.static.cuda_types import eval_int

# compiler attributes the grammar does not know (one level of nested parentheses in their arguments)
_ATTRIBUTE = re.compile(rb"\b(?:__align__|__launch_bounds__)\s*\((?:[^()]|\([^()]*\))*\)")


def blank_attributes(src: bytes) -> bytes:
    """`__align__(16)` and `__launch_bounds__(256, 2)` blanked out (same length, newlines kept): the grammar
    does not know them, and `__shared__ __align__(16) float s[N];` parsed into an error and a phantom
    shared scalar named after the size's first word. They say nothing the facts use."""
    return _ATTRIBUTE.sub(lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), src)


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_MAX_EXPANSION = 20_000  # bytes of one macro expansion (submitted text is untrusted)


def included_headers(source: str, file: str, headers: dict[str, str], seen: frozenset[str] = frozenset()) -> list[str]:
    """The submission's headers a file includes (`#include "x.cuh"`, relative to the including file's folder,
    then to the submission's root), theirs first, each once; headers the submission lacks are not read."""
    found: list[str] = []
    for name in _INCLUDE.findall(source):
        for candidate in (posixpath.join(posixpath.dirname(file), name), name):
            path = posixpath.normpath(candidate)
            if path in headers and path not in seen and path not in found and len(seen) < 16:
                found += [h for h in included_headers(headers[path], path, headers, seen | {path, *found})
                          if h not in found] + [path]
                break
    return found


class MacroReading:
    """The walker's preprocessor handlers (`on_preproc_*`), the macro-written loop and launch."""

    def read_headers(self, source: str, headers: dict[str, str], parser: ts.Parser) -> None:
        """The macros of the submission's headers `source` includes (in include order), none of their code."""
        for path in included_headers(source, self.facts.file, headers):
            self.src = blank_attributes(headers[path].encode())
            self.read_macros(parser.parse(self.src).root_node)

    def seed(self, headers: MacroReading) -> None:
        """Start with the macros a walker read from the headers the file includes (`read_headers`)."""
        self.macros.update(headers.macros)
        self.macro_text.update(headers.macro_text)
        self.macro_funcs.update(headers.macro_funcs)
        self._macro_params = dict(getattr(headers, "_macro_params", {}))

    def read_macros(self, n: ts.Node) -> None:
        """Only the `#define`s of a tree (a header's), in every `#if` branch and include guard."""
        for c in n.children:
            if c.type == "preproc_def":
                self.on_preproc_def(c)
            elif c.type == "preproc_function_def":
                self.on_preproc_function_def(c)
            elif c.type.startswith("preproc_") or c.type in ("translation_unit", "linkage_specification",
                                                             "declaration_list", "namespace_definition"):
                self.read_macros(c)

    def macro_launch(self, n: ts.Node, name: str) -> bool:
        """`LAUNCH(kern, grid, block, x, y)` where the file defines `LAUNCH(k, g, b, ...)` as `k<<<g, b>>>(__VA_ARGS__)`
        (often with `dim3` sizes and an error check around it): the expansion is read as host code at the
        invocation's line, so its launches count. True when `n` was such a launch."""
        formals, body = self.macro_funcs.get(name, ([], ""))
        args_node = n.child_by_field_name("arguments")
        if "<<<" not in body or args_node is None or getattr(self, "_expanding", 0) >= 3:
            return False
        actuals = [self.text(c) for c in args_node.named_children if c.type != "comment"]
        variadic = re.search(r"\.\.\.\s*$", getattr(self, "_macro_params", {}).get(name, ""))
        named = dict(zip(formals, actuals))
        extra = ", ".join(actuals[len(formals):]) if variadic else ""
        text = re.sub(r"#\s*#\s*__VA_ARGS__|__VA_ARGS__", extra, body.replace("\\\n", "\n"))
        text = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: named.get(m.group(0), m.group(0)), text)
        wrapped = ("void __macro_expansion__() {\n" + text + "\n;}\n").encode()
        if len(wrapped) > _MAX_EXPANSION:
            return False
        from evidence.static.cuda import _parser  # the reader's own parser (imported late: cuda imports this module)

        tree = _parser().parse(wrapped)
        fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
        body_node = fn.child_by_field_name("body") if fn is not None else None
        if body_node is None:
            return False
        src, blanked, line = self.src, self.blanked, n.start_point[0] + 1
        counts = {k: len(v) for k, v in vars(self.facts).items() if isinstance(v, list)}
        self.src, self.blanked, self._expanding = wrapped, {}, getattr(self, "_expanding", 0) + 1
        try:
            for c in body_node.children:
                self.walk(c)
        finally:
            self.src, self.blanked, self._expanding = src, blanked, self._expanding - 1
        for key, before in counts.items():  # what the expansion found sits at the invocation's line
            for e in getattr(self.facts, key)[before:]:
                if isinstance(e, Event):
                    e.line, e.end = line, line if e.end else 0
        return True

    def on_preproc_def(self, n: ts.Node) -> bool:
        name, arg = n.child_by_field_name("name"), n.child_by_field_name("value")
        if name is not None and arg is not None:
            self._define(self.text(name), eval_int(self.text(arg), self.macros))
            self.macro_text[self.text(name)] = self.text(arg)
        return False

    def _preproc_branch(self, n: ts.Node) -> None:
        """`#if 0 ... #else ... #endif`: code behind a condition the file's own integers decide to be false
        is never compiled (no barrier or atomic of it is the kernel's), and a true condition rules its
        #elif/#else out; an undecided condition (a macro from a header) keeps every branch."""
        cond = n.child_by_field_name("condition")
        alternative = n.child_by_field_name("alternative")
        text = self.text(cond) if cond is not None else ""
        value = 0 if text.strip() == "false" else 1 if text.strip() == "true" else eval_int(text, self.macros)
        for c in n.children:
            if c is cond or (c.type in ("#if", "#elif", "#endif") and not c.is_named):
                continue
            is_alternative = alternative is not None and c.id == alternative.id
            if (value == 0 and not is_alternative) or (value not in (0, None) and is_alternative):
                continue
            self.walk(c)

    def on_preproc_function_def(self, n: ts.Node) -> bool:
        name, params, body = (n.child_by_field_name(f) for f in ("name", "parameters", "value"))
        if name is not None and params is not None and body is not None:
            self.macro_funcs[self.text(name)] = (WORD.findall(self.text(params)), self.text(body))
            self._macro_params = getattr(self, "_macro_params", {})
            self._macro_params[self.text(name)] = self.text(params).strip("() ")
        return False

    def _macro_loop(self, n: ts.Node) -> None:
        """A loop spelled `MACRO(i, n) { body }`: its pattern is that of the `for` the macro expands to when
        the file defines it, grid_stride for the libraries' KERNEL_LOOP macros (Caffe's, PyTorch's, mmcv's
        CUDA_KERNEL_LOOP / CUDA_1D_KERNEL_LOOP are grid-stride loops), else unknown."""
        self.depth += 1
        decl = n.child_by_field_name("declarator")
        head = decl.child_by_field_name("declarator") if decl is not None else None
        name = self.text(head) if head is not None else ""
        params = decl.child_by_field_name("parameters") if decl is not None else None
        args = [self.text(c) for c in (params.named_children if params is not None else ())]
        pattern = "unknown"
        formals, body = self.macro_funcs.get(name, ([], ""))
        for formal, actual in zip(formals, args):
            body = re.sub(rf"\b{re.escape(formal)}\b", actual, body)
        m = re.match(r"\s*for\s*\((.*?);(.*?);(.*)\)\s*$", body.replace("\\\n", " "), re.S)
        if m:
            init, update = m.group(1), m.group(3)
            pattern = self._pattern(init, update)
            var = WORD.findall(init.split("=")[0])[-1:]
            if var and re.search(r"threadIdx", init):
                self.thread_vars.update(var)
        elif name not in self.macro_funcs and re.search(r"KERNEL_LOOP", name):
            pattern = "grid_stride"
        self.facts.loops.append(Event("for", self.fn.name, n.start_point[0] + 1, n.end_point[0] + 1,
                                      labels={"pattern": pattern, "macro": name}, value=float(self.depth)))

    def _define(self, name: str, value: int | None) -> None:
        """Record a compile-time integer. A name defined twice with different values (the two
        branches of an `#if`, which this reader does not evaluate) has no single value: it
        folds to unknown rather than to whichever definition came last."""
        if name in self.macros and self.macros[name] != value:
            value = None
        self.macros[name] = value
