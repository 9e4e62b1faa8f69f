"""The NKI range iterators: loops the simulator runs in order and tracks for dependency checks.

Beta `affine_range` iterations must not depend on each other (REFERENCE §3.3); the run state keeps
the current iteration of every enclosing loop so HBM writes by different affine iterations are
found (`err_unexpected_output_dependencies`), and the trace marks each iteration's start for the
cost model. In nki 0.3+ all three iterators are deprecated aliases of Python `range`.
"""

from __future__ import annotations

from evidence.nki import state as _state


class LoopRange:
    __slots__ = ("kind", "r")

    def __init__(self, kind: str, r: range) -> None:
        self.kind = kind
        self.r = r

    def __len__(self) -> int:
        return len(self.r)

    def __iter__(self):
        st = _state.get()
        if st is None:
            yield from self.r
            return
        frame = st.new_loop(self.kind)
        st.loops.append(frame)
        rec = st.recorder
        line = st.where()[1] if rec.keep else 0  # the loop header's kernel line, once per loop
        # the error model's reversed-order trial runs affine iterations last to first (a legal order)
        order = reversed(self.r) if self.kind == "affine" and st.affine_reversed else self.r
        try:
            for i in order:
                frame.it = i
                if rec.keep:
                    rec.marks.append((len(rec.events), frame.token, self.kind, i, line))
                yield i
        finally:
            if frame in st.loops:
                st.loops.remove(frame)
            st.reset_path()


def loop_iterator(kind: str, name: str):
    """`nl.<name>(start, stop=None, step=1)` iterating as a `kind` (affine, sequential, static) loop."""
    def make(start, stop=None, step=1, **_directives):
        if stop is None:
            start, stop = 0, start
        return LoopRange(kind, range(int(start), int(stop), int(step)))

    make.__name__ = name
    return make
