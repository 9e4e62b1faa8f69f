"""What the CUDA reader (evidence.static.cuda) finds in a `.cu` file: its functions and the events in them
(launches, shared arrays, barriers, atomics, warp and tensor-core primitives, accumulators, loops)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class CudaFunction:
    name: str
    qualifier: str  # global | device | host
    start: int
    end: int
    # Element dtypes of const pointer parameters and of all pointer parameters, in order; "?" where
    # the element type is a template parameter or a typedef this reader cannot resolve (`const T*`,
    # `const floatX*`): an unknown input is not the same as no input.
    input_dtypes: tuple[str, ...]
    pointer_dtypes: tuple[str, ...]
    builtins: Counter = field(default_factory=Counter)  # "threadIdx.x" -> uses
    # element dtypes of the pointer parameters the function never writes through (nor hands to a call)
    read_only_dtypes: tuple[str, ...] = ()
    global_index: bool = False


@dataclass
class Event:
    what: str  # the primitive or variable
    function: str
    line: int
    end: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    value: float | None = None


@dataclass
class CudaFacts:
    file: str
    functions: list[CudaFunction] = field(default_factory=list)
    launches: list[Event] = field(default_factory=list)
    shared: list[Event] = field(default_factory=list)
    syncs: list[Event] = field(default_factory=list)
    atomics: list[Event] = field(default_factory=list)
    warp: list[Event] = field(default_factory=list)
    tensor_core: list[Event] = field(default_factory=list)
    accumulators: list[Event] = field(default_factory=list)
    loops: list[Event] = field(default_factory=list)
    other_idioms: list[Event] = field(default_factory=list)  # printf, grid sync, spin loops, malloc
    # `out[i] += v`, `sdata[tid] += sdata[tid + s]` in a loop: sums kept in global or shared memory
    # (not register accumulators, so no accumulator dtype), still evidence the kernel accumulates.
    memory_updates: list[Event] = field(default_factory=list)
    calls: dict[str, set[str]] = field(default_factory=dict)  # function -> names it calls or launches
    parse_errors: list[tuple[int, int]] = field(default_factory=list)  # line spans tree-sitter could not parse
    template_params: dict[str, tuple[str, ...]] = field(default_factory=dict)  # function -> its template parameters
    # typedefs, `using` aliases and structs of the file: `BlockReduce(temp)` constructs one, it calls no helper
    type_names: set[str] = field(default_factory=set)

    @property
    def kernels(self) -> list[CudaFunction]:
        return [f for f in self.functions if f.qualifier == "global"]

    def reachable(self, roots: list[str]) -> set[str]:
        """`roots` and the functions of this file they call, transitively (device helpers of a kernel)."""
        defined = {f.name.split("<")[0] for f in self.functions}
        # Using a struct (`Smem<T>()`, `Smem<T> s;`) reaches its member functions, named `Smem::...`.
        members: dict[str, set[str]] = {}
        for f in self.functions:
            if "::" in f.name:
                members.setdefault(f.name.split("::")[0].split("<")[0], set()).add(f.name)
        seen, todo = set(), [r for r in roots if r in defined]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                for c in (c.rsplit("::", 1)[-1] for c in self.calls.get(name, ())):
                    todo.extend(m for m in ({c} & defined) | members.get(c, set()) if m not in seen)
        return seen
