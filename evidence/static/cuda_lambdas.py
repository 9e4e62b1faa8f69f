"""Qualifiers where the grammar cannot place them, and the device lambdas they mark.

`[=] __device__ (int i) { ... }` (an extended lambda, handed to a templated `for_each`-style kernel or a
library launcher) and a qualifier spelled through a macro (`#define DEVICE_FN __device__ __forceinline__`,
PyTorch's `GPU_LAMBDA`, in the file or in a header it includes) parse into errors: tree-sitter's CUDA
grammar knows the qualifiers only before a declaration and cannot expand a macro. `blank_qualifiers`
blanks them before parsing (same length, so every line and byte stays put) and keeps, by byte offset, what
each blanked word stood for; a function's head and a lambda read them back.

A device lambda written in host code is device code of its own: its body is walked as a function named
`<host function>.lambda@<line>` (qualifier `device`), with the types of the names it captures, and a
launch passing it (inline, or through the variable it was stored in) makes it reachable from that kernel.
A lambda inside device code is simply part of that code.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from evidence.static.cuda_model import CudaFunction

_QUALIFIERS = {"__device__", "__host__", "__global__", "__forceinline__", "__noinline__", "__inline__", "inline",
               "static"}
_LAMBDA_QUALIFIER = re.compile(rb"\]\s*((?:(?:__device__|__host__)\b\s*)+)(?=\(|mutable\b|->|\{)")
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*?)[ \t]*$", re.M)
# the walker's per-function state a lambda's walk saves and restores
_STATE = ("types", "thread_vars", "grid_vars", "var_init", "groups", "pointers", "decl_depth", "params", "dim3",
          "pointer_params", "aliases", "written", "fn_text", "local_ints", "local_arrays", "fn", "depth")


def qualifier_macros(src: bytes, macro_text: dict[str, str]) -> dict[str, str]:
    """Macros (the file's `#define`s and the included headers' `macro_text`) that stand for qualifiers only."""
    found = {name: text for name, text in macro_text.items()}
    found.update({m.group(1).decode(): m.group(2).decode(errors="replace") for m in _DEFINE.finditer(src)})
    return {name: " ".join(text.split()) for name, text in found.items()
            if text.split() and set(text.split()) <= _QUALIFIERS}


def blank_qualifiers(src: bytes, macros: dict[str, str]) -> tuple[bytes, dict[int, str]]:
    """(`src` with qualifier macros and lambda qualifiers blanked, {byte offset: the qualifiers it stood for})."""
    out = bytearray(src)
    where: dict[int, str] = {}
    if macros:
        words = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in macros) + rb")\b")
        for m in words.finditer(src):
            line_start = src.rfind(b"\n", 0, m.start()) + 1
            if re.match(rb"[ \t]*#", src[line_start:m.start()]):
                continue  # the macro's own #define (or an #ifdef naming it)
            out[m.start():m.end()] = b" " * (m.end() - m.start())
            where[m.start()] = macros[m.group(1).decode()]
    for m in _LAMBDA_QUALIFIER.finditer(bytes(out)):
        out[m.start(1):m.end(1)] = re.sub(rb"\S", b" ", m.group(1))
        where[m.start(1)] = m.group(1).decode()
    return bytes(out), where


class LambdaReading:
    """The walker's handler of lambdas (a mixin of `evidence.static.cuda._Walker`); reads `blanked`."""

    blanked: dict[int, str]

    def qualifiers_between(self, start: int, end: int) -> str:
        return " ".join(text for off, text in self.blanked.items() if start <= off < end)

    def device_lambda(self, n: ts.Node) -> bool:
        """A lambda whose blanked qualifiers (between its capture and its parameters) include __device__."""
        decl = next((c for c in n.children if c.type == "lambda_declarator"), None)
        capture = next((c for c in n.children if c.type == "lambda_capture_specifier"), None)
        if capture is None:
            return False
        end = decl.start_byte if decl is not None else (n.child_by_field_name("body") or n).start_byte
        return "__device__" in self.qualifiers_between(capture.end_byte, end)

    def lambda_name(self, n: ts.Node) -> str:
        # (the host function's own name: `A::run.lambda@9` would read as a member of a struct `A`)
        return f"{self.fn.name.rsplit('::', 1)[-1] if self.fn else ''}.lambda@{n.start_point[0] + 1}"

    def lambdas_passed(self, args: ts.Node | None) -> list[str]:
        """Device lambdas a launch's arguments pass: written inline, or a variable holding one."""
        found = []
        for a in args.named_children if args is not None else ():
            if a.type == "lambda_expression" and self.device_lambda(a):
                found.append(self.lambda_name(a))
            elif a.type == "identifier" and self.text(a) in self.lambda_vars:
                found.append(self.lambda_vars[self.text(a)])
        return found

    def on_lambda_expression(self, n: ts.Node) -> bool:
        if self._device() or not self.device_lambda(n):
            return True  # a lambda of device code is that code's; a host lambda is host code
        name = self.lambda_name(n)
        if n.parent is not None and n.parent.type == "init_declarator":  # `auto op = [=] __device__ ...`
            var = n.parent.child_by_field_name("declarator")
            if var is not None:
                self.lambda_vars[self.text(var)] = name
        saved = {k: getattr(self, k) for k in _STATE}
        outer = self.fn
        fn = CudaFunction(name, "device", n.start_point[0] + 1, n.end_point[0] + 1,
                          outer.input_dtypes if outer else (), outer.pointer_dtypes if outer else ())
        self.facts.functions.append(fn)
        # the names it captures keep their types; what it declares is its own
        self.types, self.pointers = dict(saved["types"]), set(saved["pointers"])
        self.pointer_params, self.aliases = dict(saved["pointer_params"]), dict(saved["aliases"])
        self.thread_vars, self.grid_vars, self.var_init, self.groups = set(), set(), {}, dict(saved["groups"])
        self.decl_depth, self.params, self.dim3, self.written, self.local_arrays = {}, {}, {}, set(), set()
        self.local_ints, self.fn_text, self.fn, self.depth = dict(saved["local_ints"]), self.text(n), fn, 0
        decl = next((c for c in n.children if c.type == "lambda_declarator"), None)
        params = decl.child_by_field_name("parameters") if decl is not None else None
        for i, p in enumerate(params.named_children if params is not None else ()):
            words = re.findall(r"[A-Za-z_]\w*", self.text(p))
            if words:
                self.params[words[-1]] = i
                self.types[words[-1]] = self._dtype(self.text(p)) or ""
                self.local_ints[words[-1]] = None
        try:
            for c in n.children:
                self.walk(c)
            fn.read_only_dtypes = tuple(d for p, d in self.pointer_params.items() if p not in self.written)
        finally:
            for k, v in saved.items():
                setattr(self, k, v)
        return False


__all__ = ["LambdaReading", "blank_qualifiers", "qualifier_macros"]
