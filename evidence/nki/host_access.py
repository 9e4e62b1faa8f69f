"""Host access to tensor data: a kernel computing on the host instead of with NKI instructions.

On Trainium a kernel is traced and compiled, so a tile has no value host Python could read:
`np.asarray(tile)`, `tile.tolist()`, `float(tile)`, `bytes(tile)` or a host array fed to an
instruction mean the kernel computes (part of) its result on the host. The simulator does hold
the values, so without these checks such a kernel would "match the reference".

- Reading a tile on the host (`HostAccessGuard` methods on `Tensor`) records a `host_compute`
  finding at the kernel line and stops the run with `err_host_access` (a kernel that catches the
  error keeps the finding).
- A host array of more than one element passed to an instruction (`note_host_operand`), a kernel
  that returns something other than an HBM tensor it wrote, and outputs computed without reading
  any input (a pre-computed constant) are `host_compute` findings (`check_outputs`).
- Inputs whose values changed without an instruction writing them are `input_mutation`
  findings (`InputDigests`).
"""

from __future__ import annotations

import blake3
import numpy as np

from evidence.nki import state as _state

HOST_COMPUTE = "host_compute"
INPUT_MUTATION = "input_mutation"


def _refuse(what: str):
    st = _state.get()
    message = (f"{what} reads tile values on the host; NKI tensors have no host value (the kernel is traced "
               "and compiled), so the kernel must compute with NKI instructions")
    if st is None:
        raise TypeError(message)
    st.finding(HOST_COMPUTE, message, "high")
    raise st.error("err_host_access", message)


class HostAccessGuard:
    """Mixin for `Tensor`: every way numpy or Python could read a tile's values on the host."""

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        _refuse("np.asarray/np.array of a tile")

    def tolist(self):
        _refuse("tile.tolist()")

    def item(self, *args):
        _refuse("tile.item()")

    def numpy(self):
        _refuse("tile.numpy()")

    def tobytes(self, *args, **kwargs):
        _refuse("tile.tobytes()")

    def __bytes__(self):
        _refuse("bytes(tile)")

    def __float__(self):
        _refuse("float(tile)")

    def __int__(self):
        _refuse("int(tile)")

    def __complex__(self):
        _refuse("complex(tile)")

    def __index__(self):
        _refuse("using a tile as a Python index")


def note_host_operand(x) -> None:
    """Record a host array (more than one element) used as an instruction operand."""
    if isinstance(x, np.ndarray) and x.size > 1:
        st = _state.get()
        if st is not None:
            st.finding(HOST_COMPUTE, f"a host array of shape {list(np.shape(x))} is an operand of an NKI "
                       "instruction: its values were computed on the host, not with NKI instructions", "high")


def _loaded(alloc) -> bool:
    """Some element of an input allocation was loaded (its loaded boxes, else its lmask)."""
    return alloc.lcov.any() if alloc.lcov is not None else bool(alloc.lmask.any())


def check_outputs(st, returned: tuple, params: list, is_tensor, kernel_site: tuple[str | None, int]) -> None:
    """Findings for returned values that are not HBM tensors the kernel wrote, and for outputs
    computed without reading any input tensor (a pre-computed constant)."""
    for i, r in enumerate(returned):
        if not is_tensor(r):
            if r is not None:
                st.finding(HOST_COMPUTE, f"output {i} is a host {type(r).__name__}, not an HBM tensor the kernel "
                           "wrote with NKI instructions", "high", at=kernel_site)
        elif r.alloc.param < 0 and r.alloc.stamp is None and not st.trace_only:
            st.finding(HOST_COMPUTE, f"output {i} is a tensor the kernel did not create with an NKI allocation "
                       "(its data came from the host)", "high", at=kernel_site)
    inputs = [p for p in params if is_tensor(p) and p.alloc.lmask is not None]
    if returned and inputs and not st.trace_only and not any(_loaded(p.alloc) for p in inputs):
        st.finding(HOST_COMPUTE, "the kernel's outputs were produced without reading any element of its input "
                   "tensors: a pre-computed constant, not a computation", "high", at=kernel_site)


class InputDigests:
    """Digests of the input arrays before a run, to find inputs changed by host code afterwards.

    Each input is hashed in 64 MiB chunks (BLAKE3 of the chunks' BLAKE3 digests), so `parallel` (a function
    running a list of callables, e.g. on the simulation's worker threads; blake3 releases the GIL) can
    hash the chunks at once. The chunking does not depend on the number of threads."""

    def __init__(self, params: list, is_tensor, parallel=None) -> None:
        self.digests = _digests({i: p.alloc.data for i, p in enumerate(params)
                                 if is_tensor(p) and not p.alloc.state.trace_only}, parallel)
        self.after: dict[int, bytes] | None = None

    def take_after(self, params: list, written: set[int], parallel=None) -> None:
        """Hash the inputs no instruction wrote, once the kernel has returned (`check` compares them)."""
        self.after = _digests({i: params[i].alloc.data for i in self.digests if i not in written}, parallel)

    def check(self, st, params: list, written: set[int], kernel_site: tuple[str | None, int]) -> None:
        after = self.after
        if after is None:
            after = _digests({i: params[i].alloc.data for i in self.digests if i not in written}, None)
        for i, before in self.digests.items():
            if i not in written and after.get(i) != before:
                st.finding(INPUT_MUTATION, f"input {i} changed although no NKI instruction wrote it: the kernel "
                           "modified its input on the host", "high", at=kernel_site)


_CHUNK = 64 << 20


def _digests(arrays: dict[int, np.ndarray], parallel) -> dict[int, bytes]:
    # BLAKE3 (a cryptographic hash, as sha256 was): every input byte is hashed twice per run (0.9 GB for the
    # 4096 x 12288 x 5120 matmul benchmark's inputs); one thread hashes 4.7 GB/s here, sha256 with the
    # CPU's SHA extensions 1.8 GB/s, blake2b 0.9 GB/s
    parts = []
    for i, a in arrays.items():
        raw = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        parts.extend((i, raw[lo:lo + _CHUNK]) for lo in range(0, max(raw.size, 1), _CHUNK))
    fns = [lambda c=c: blake3.blake3(c.data).digest() for _, c in parts]
    hashes = parallel(fns) if parallel is not None and len(fns) > 1 else [fn() for fn in fns]
    joined = {i: blake3.blake3() for i in arrays}
    for (i, _), h in zip(parts, hashes):
        joined[i].update(h)
    return {i: h.digest() for i, h in joined.items()}
