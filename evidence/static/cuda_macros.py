"""How the CUDA reader sees the preprocessor: `#define` integers and text (a kernel qualifier spelled through a
macro), function-like macros (a loop written `CUDA_KERNEL_LOOP(i, n) { ... }`), `#if` branches the file's own
integers decide, and compiler attributes the grammar does not know. A mixin of the CUDA reader's walker
(evidence.static.cuda), which keeps the macro tables, the function being walked and the loop depth."""

from __future__ import annotations

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


class MacroReading:
    """The walker's preprocessor handlers (`on_preproc_*`) and the macro-written loop."""

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
