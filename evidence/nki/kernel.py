"""Kernel objects made by `nki.jit` / `baremetal` / `benchmark` / `profile`, with SPMD grids."""

from __future__ import annotations

from evidence.nki import state as _state
from evidence.nki.simulate import simulate


class Kernel:
    """A decorated kernel function. `k[a, b]` fixes an SPMD grid; calling it outside a run simulates it."""

    def __init__(self, func, mode: str = "auto", grid: tuple[int, ...] = (), timing: str | None = None, options=None):
        while isinstance(func, Kernel):  # stacked decorators
            timing = timing or func.timing
            func = func.func
        self.func = func
        self.mode = mode
        self.grid = grid
        self.timing = timing  # "benchmark" / "profile": the real tool would time it; we cannot
        self.options = dict(options or {})
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid) -> Kernel:
        grid = grid if isinstance(grid, tuple) else (grid,)
        return type(self)(self.func, self.mode, tuple(int(g) for g in grid), self.timing, self.options)

    def __call__(self, *args, **kwargs):
        st = _state.get()
        if st is not None:  # a kernel calling another kernel: an inlined helper
            if self.grid:
                raise st.error("err_nested_kernel_with_spmd_grid", f"kernel {self.__name__} with a grid called inside a kernel")
            if st.jit_depth == 0:  # called by a plain entry function (a harness): this is the top-level kernel
                st.kernel_codes.add(self.func.__code__)
            st.jit_depth += 1
            nested_ok = st.nested_shared_hbm_ok
            st.nested_shared_hbm_ok = nested_ok or _state.skips_nested_shared_hbm_check(self)
            try:
                return self.func(*args, **kwargs)
            finally:
                st.jit_depth -= 1
                st.nested_shared_hbm_ok = nested_ok
        return simulate(self, *args, target=self.target(), **kwargs).returned

    def target(self) -> str:
        """The target a direct call simulates for (the standalone dialect reads the environment)."""
        return "trn2"

    def __repr__(self) -> str:
        return f"<nki kernel {self.__name__}{list(self.grid) if self.grid else ''}>"


def _decorator(mode: str, timing: str | None = None):
    def deco(func=None, *args, **options):
        if func is None or not callable(func):
            if func is not None:
                options = {"arg0": func, **options}
            return lambda f: Kernel(f, mode, (), timing, options)
        return Kernel(func, mode, (), timing, options)

    deco.__name__ = mode
    return deco


jit = _decorator("auto")
trace = _decorator("trace")
baremetal = _decorator("baremetal")
benchmark = _decorator("benchmark", "benchmark")
profile = _decorator("profile", "profile")


def simulate_kernel(kernel, *args, **kwargs):
    """`nki.simulate_kernel(k[grid], *numpy_args)`: run and return what the kernel returns."""
    return simulate(kernel, *args, **kwargs).returned
