"""How a CUDA loop steps its variable: thread-strided, grid-strided, a tree reduction (log2(n) rounds that
combine values), log steps that combine nothing, serial, a spin wait, or an atomicCAS retry. A mixin of the CUDA reader's walker
(evidence.static.cuda), which keeps the state the patterns read: the function being walked, loop depth,
variables' initial values and the thread- and grid-derived variables."""

from __future__ import annotations

import re

import tree_sitter as ts

from evidence.static.cuda_model import Event

# What a reduction or scan round does to its values: a compound update, a min/max, a shuffle, a
# collective or an atomic (`a = a + b` is caught by the self-reference).
_COMBINES = re.compile(r"[-+*/|&^]=|\b(f?max|f?min|fmaxf|fminf|__h?max|__h?min)\s*\(|__shfl|\breduce\b|\bshfl|atomic"
                       r"|\b(\w+)\s*(?:\[[^;]*?\])?\s*(?<![<>!=])=(?!=)[^;]*\b\2\b")
WORD = re.compile(r"[A-Za-z_]\w*")  # an identifier
_CAS = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(?:\(\w+\)\s*)?:{0,2}atomicCAS\w*\s*\(")  # `old = atomicCAS(...)`


def descendants(n: ts.Node, type_: str):
    """Nodes of one type under `n`, in source order."""
    for c in n.children:
        if c.type == type_:
            yield c
        yield from descendants(c, type_)


class LoopPatterns:
    """The walker's loop visitors: each device loop becomes a `loops` event labelled with its pattern."""

    def on_for_statement(self, n: ts.Node) -> None:
        self._loop(n)

    def on_while_statement(self, n: ts.Node) -> None:
        self._loop(n)

    def on_do_statement(self, n: ts.Node) -> None:
        self._loop(n)

    def _loop(self, n: ts.Node) -> None:
        self.depth += 1
        if not self._device():
            return
        cond = n.child_by_field_name("condition")
        cond_text = self.text(cond) if cond is not None else ""
        if n.type == "for_statement":
            init_node, update_node = n.child_by_field_name("initializer"), n.child_by_field_name("update")
            init, update = (self.text(init_node) if init_node is not None else ""), (
                self.text(update_node) if update_node is not None else "")
        else:
            # A while/do loop steps its variable in the body: find the step of a variable of the
            # condition, and the value that variable was declared with.
            init, update = "", ""
            cond_vars = set(WORD.findall(cond_text))
            body = n.child_by_field_name("body")
            for a in descendants(body, "assignment_expression") if body is not None else ():
                left = a.child_by_field_name("left")
                if left is not None and left.type == "identifier" and self.text(left) in cond_vars:
                    update = self.text(a)
                    break
        var = WORD.match(update.strip())
        if not init and var:
            init = self.var_init.get(var.group(0), "")
        pattern = self._pattern(init, update)
        body = n.child_by_field_name("body")
        if pattern == "tree_reduction" and body is not None and not _COMBINES.search(self.text(body)):
            # Log2(n) rounds that combine nothing (a bitonic sort's merge stages swap through a
            # comparator; a loop halving a tile size): geometric steps, not a reduction.
            pattern = "log_step"
        if n.type != "for_statement" and body is not None and any(
                m.group(1) in WORD.findall(cond_text) for m in _CAS.finditer(self.text(body))):
            # `do { assumed = old; old = atomicCAS(a, assumed, f(assumed)); } while (assumed != old);`:
            # one atomic update retried until no other thread interfered, not serial work
            pattern = "atomic_retry"
        elif n.type == "while_statement" and not update and ("atomic" in cond_text or "volatile" in cond_text):
            pattern = "spin_wait"
            self.facts.other_idioms.append(Event("spin_wait", self.fn.name if self.fn else "", n.start_point[0] + 1))
        self.facts.loops.append(Event(n.type.split("_")[0], self.fn.name if self.fn else "", n.start_point[0] + 1,
                                      n.end_point[0] + 1, labels={"pattern": pattern}, value=float(self.depth)))

    def _pattern(self, init: str, update: str) -> str:
        """The loop's pattern from how its variable starts (`init`) and steps (`update`).

        Builtins named elsewhere in the header decide nothing: `s = blockDim.x / 2; s > 0; s >>= 1`
        is a tree reduction and `k = 0; k < blockDim.x; k += 32` a serial walk."""
        words = set(WORD.findall(update))
        if re.search(r">>=|<<=|/=|\*=", update) or re.search(r"\b(\w+)\s*=\s*\1\s*(/|\*|>>|<<)", update):
            return "tree_reduction"  # a geometric step: log2(n) rounds of a reduction or scan
        if not re.search(r"\+=|-=|\+\+|--|=", update):
            return "serial"
        if "gridDim" in update or words & self.grid_vars or any(self._group_of(w) == "grid" for w in words):
            return "grid_stride"  # (`i += grid.size()` on a cooperative-groups grid_group strides the grid)
        starts_at_thread = bool(re.search(r"threadIdx|thread_rank\(\)", init)) or bool(
            self.thread_vars & set(WORD.findall(init.split("=", 1)[-1])))
        if ("+=" in update or "-=" in update) and (starts_at_thread or "blockDim" in update):
            return "thread_stride"
        return "serial"
