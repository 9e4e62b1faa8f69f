"""The run-time state of one simulation: where the kernel is, loops, findings, memory peaks.

One `State` is current while a kernel runs (a module global, saved and restored around nested
simulations). Every instruction asks it for the kernel file:line of the call, by walking the
Python frames up to the first one whose code belongs to a kernel file.
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass

import numpy as np

from evidence.nki.errors import SimulationError
from evidence.nki.page_pool import PagePool
from evidence.nki.pipeline import Pipeline
from evidence.nki.tile_pool import TilePool
from evidence.nki.trace import Recorder

# REFERENCE §1/§2: tile_size.total_available_sbuf_size per partition; trn3 (NeuronCore-v4) is "reference only"
SBUF_USABLE_BYTES = {"trn1": 180224, "inf2": 180224, "trn2": 212984, "trn3": 245752}
NC_VERSION = {"trn1": 2, "inf2": 2, "trn2": 3, "trn3": 4}
PSUM_BANKS = 8
PSUM_BANK_BYTES = 2048


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    file: str | None
    line: int
    severity: str  # info | low | medium | high | critical


class LoopFrame:
    __slots__ = ("kind", "token", "it")

    def __init__(self, kind: str, token: int) -> None:
        self.kind = kind
        self.token = token
        self.it = -1


class State:
    def __init__(self, target: str, trace_only: bool, kernel_files: dict[str, str], ops: dict,
                 keep_trace: bool = True, workers: int = 0):
        if target not in SBUF_USABLE_BYTES:
            raise ValueError(f"unknown target {target!r}; expected one of {sorted(SBUF_USABLE_BYTES)}")
        self.target = target
        self.ops = ops  # op name -> Op (evidence.nki.ops.OPS): what dispatch.call looks names up in
        self.pipeline = Pipeline(0 if trace_only else workers)  # TensorE jobs on worker threads
        self.pages = PagePool()  # lazily mapped memory of large on-chip tensors, reused within the run
        self.tiles = TilePool()  # zero-filled tiles (`nl.zeros` in a loop), reused within the run
        self.dialect = "beta"  # beta | standalone (evidence.nki.dialect), set by simulate from the kernel file
        self.neuron_sdk: str | None = None  # the task's Neuron SDK ("2.29"; None: unstated), set by simulate
        self.trace_only = trace_only
        self.files = kernel_files  # code filename -> display name
        self.kernel_codes: set = set()  # code objects of the top-level kernel functions
        self.jit_depth = 0  # nki.jit kernels running (the entry counts when it is one; see kernel.Kernel.__call__)
        # a running kernel's decorator passes experimental_flags='skip-non-top-level-shared-hbm-check': its helpers
        # and loops may create shared_hbm tensors (ops.create.allocate)
        self.nested_shared_hbm_ok = False
        self._sites: dict = {}  # (id of a code object, instruction offset) -> ((kernel file, line), code): where()
        self.recorder = Recorder(keep_trace)
        self.findings: dict[tuple, Finding] = {}
        self.loops: list[LoopFrame] = []
        self._tokens = 0
        self._alloc_ids = 0
        # run affine_range iterations last to first (a legal order for independent iterations): an
        # illegal loop-carried dependency then changes the results (the error model's order trial)
        self.affine_reversed = False
        self.order_state_line = 0  # reversed run: first line using a mask from another affine iteration (indexing)
        self.body_completed = False  # every SPMD instance ran the kernel body to its end (simulate)
        self.paths: list[tuple] = []
        self._path_key: tuple | None = None
        self.program_id: tuple[int, ...] = ()
        self.grid: tuple[int, ...] = ()
        self.shared: list = []  # shared_hbm allocations, reused across SPMD instances in creation order
        self.shared_next = 0
        self.sbuf_live = 0
        self.sbuf_peak = 0
        self.sbuf_spans: dict[tuple[int, int], int] = {}  # byte spans of live SBUF tensors placed by address
        self.sbuf_spanned = 0  # bytes per partition their union covers (counted in sbuf_live)
        self.placements: dict = {}  # buffer -> live on-chip tensors placed by address (evidence.nki.placement)
        # PSUM tiles are live from their first to their last access by an instruction, as an allocator working
        # from the instruction stream sees them (Python keeps a tile it will never use again alive until the name
        # is rebound): one [first, last, banks] per PSUM allocation, positions counted by `instr_seq`
        self.psum_open: dict[int, list[int]] = {}  # allocation uid -> its range, while the allocation exists
        self.psum_closed = array("q")  # first, last, banks of freed allocations that were accessed: 24 bytes each
        self.instr_seq = 0
        self.matmul_stationary: dict[tuple, tuple] = {}  # (file, line) -> the last tiny matmul's stationary (dispatch)
        self.redundant_bytes = 0
        # HBM stores overwritten before anything read them (evidence.nki.overwrites): allocations tracked, bytes by
        # the id of the line whose store was overwritten, and the lines by id (1-based)
        self.pending_allocs: list = []
        self.overwritten: dict[int, int] = {}
        self.write_lines: list[tuple[str | None, int]] = []
        self._write_line_ids: dict[tuple[str | None, int], int] = {}
        self.pstart_views = False  # some view breaks the partition start rule (dispatch.partition_start)
        self.param_writes: dict[int, tuple[str | None, int]] = {}
        self.params_written: set[int] = set()  # arguments some instruction wrote (any op, any path)
        self.rng = np.random.default_rng(0)
        self.acc_regs: dict[str, np.ndarray] = {}  # per-engine accumulator registers (ops.base.accumulate_registers)
        # Undefined-data provenance of the instruction being executed (reset by dispatch.call):
        # the kernel file:line of the first read of undefined elements its values depend on, and
        # whether this instruction itself read undefined elements (see tensor.Tensor.read).
        self.read_origin: tuple[str | None, int] | None = None
        self.read_direct = False
        self.nc_version = NC_VERSION[target]

    # --- where in the kernel -------------------------------------------------------------
    def where(self) -> tuple[str | None, int]:
        f = sys._getframe(1)
        files = self.files
        while f is not None:
            code = f.f_code
            if code.co_filename in files:
                # f_lineno decodes the code's line table from its start on every call (microseconds in a
                # long kernel function): the answer is kept per code object and instruction offset. The key
                # is the code's id (hashing a code object hashes its constants); the entry keeps the code alive.
                at = (id(code), f.f_lasti)
                kept = self._sites.get(at)
                if kept is None:
                    kept = self._sites[at] = ((files[code.co_filename], f.f_lineno), code)
                return kept[0]
            f = f.f_back
        return None, 0

    def caller_in_other_file(self) -> tuple[str | None, int] | None:
        """The innermost kernel-file frame outside the file of `where()`: who called a helper module's
        function (an allocator creating a tensor for the kernel), or None."""
        f = sys._getframe(1)
        files = self.files
        inner = None
        while f is not None:
            name = files.get(f.f_code.co_filename)
            if name is not None:
                if inner is None:
                    inner = name
                elif name != inner:
                    return name, f.f_lineno
            f = f.f_back
        return None

    def in_kernel_top_level(self) -> bool:
        """True when the innermost kernel-file frame is a top-level kernel function (not a helper)."""
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename in self.files:
                return f.f_code in self.kernel_codes
            f = f.f_back
        return True

    def error(self, code: str, message: str) -> SimulationError:
        file, line = self.where()
        return SimulationError(code, message, file, line)

    def finding(self, code: str, message: str, severity: str, once_per_code: bool = False,
                at: tuple[str | None, int] | None = None) -> None:
        file, line = self.where() if at is None else at
        key = (code,) if once_per_code else (code, file, line)
        if key not in self.findings:
            self.findings[key] = Finding(code, message, file, line, severity)

    def write_line_id(self) -> int:
        """The id (1-based; 0 past the int16 range) of the kernel line issuing the current write."""
        at = self.where()
        i = self._write_line_ids.get(at)
        if i is None:
            self.write_lines.append(at)
            i = self._write_line_ids[at] = len(self.write_lines) if len(self.write_lines) < 32767 else 0
        return i

    # --- loops and write provenance ------------------------------------------------------
    def new_alloc_id(self) -> int:
        self._alloc_ids += 1
        return self._alloc_ids

    def new_loop(self, kind: str) -> LoopFrame:
        self._tokens += 1
        return LoopFrame(kind, self._tokens)

    def path_id(self) -> int:
        """Id of the current loop-iteration path (SPMD instance first, then each loop level)."""
        key = tuple((fr.token, fr.it) for fr in self.loops)
        if key != self._path_key:
            kinds = ("affine",) + tuple(fr.kind for fr in self.loops)
            self.paths.append((((0, self._spmd_flat()),) + key, kinds))
            self._path_key = key
        return len(self.paths) - 1

    def _spmd_flat(self) -> int:
        return int(np.ravel_multi_index(self.program_id, self.grid)) if self.grid else 0

    def reset_path(self) -> None:
        self._path_key = None

    def conflicting(self, earlier: int, now: int) -> bool:
        """Do two write paths differ first at an affine level (different iterations of one loop)?"""
        (a, kinds), (b, _) = self.paths[earlier], self.paths[now]
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y:
                continue
            return x[0] == y[0] and kinds[i] == "affine"
        return False

    # --- on-chip memory accounting -------------------------------------------------------
    def alloc_onchip(self, buffer: str, per_partition: int) -> int:
        if buffer == "sbuf":
            self.sbuf_live += per_partition
            return per_partition
        return -(-per_partition // PSUM_BANK_BYTES)

    def psum_range(self, uid: int, banks: int) -> list[int]:
        """The live range of a new PSUM allocation of `banks` banks, not yet accessed. A negative `banks` is
        the bit mask of the banks a direct allocation (`ncc.psum.alloc`/`mod_alloc`) pins, negated
        (`pin_banks`): tensors pinned to the same bank share it."""
        live = self.psum_open[uid] = [-1, -1, banks]
        return live

    @staticmethod
    def pin_banks(banks) -> int | None:
        """The `banks` entry of a live range for a direct allocation onto the bank numbers `banks`; None
        when there are none or one does not fit the mask (ranges are kept as signed 64-bit integers)."""
        banks = set(banks)
        if not banks or not all(0 <= b < 62 for b in banks):
            return None
        return -sum(1 << b for b in banks)

    def psum_close(self, uid: int) -> None:
        """The allocation is freed: its range is final, kept compactly (a long run frees millions of tiles)."""
        live = self.psum_open.pop(uid, None)
        if live is not None and live[0] >= 0:
            self.psum_closed.extend(live)

    def psum_peak(self) -> int:
        """Most PSUM banks whose live ranges (first to last access, inclusive) overlap; banks a direct
        allocation pins count once however many live tensors share them."""
        closed = self.psum_closed
        steps: list[tuple[int, int, int]] = []
        for first, last, banks in (*zip(closed[0::3], closed[1::3], closed[2::3]), *self.psum_open.values()):
            if first >= 0:
                steps.append((first, 1, banks))
                steps.append((last + 1, -1, banks))
        steps.sort(key=lambda s: (s[0], s[1]))  # at one position, ranges ending before it count off first
        peak = live = 0
        pins: dict[int, int] = {}  # pinned bank -> live tensors on it
        for _, sign, banks in steps:
            if banks >= 0:
                live += sign * banks
            else:
                mask, bank = -banks, 0
                while mask:
                    if mask & 1:
                        pins[bank] = pins.get(bank, 0) + sign
                    mask, bank = mask >> 1, bank + 1
            peak = max(peak, live + sum(1 for n in pins.values() if n > 0))
        return peak

    def sample_peaks(self) -> None:
        """Peaks are sampled between instructions, so `x = nl.ndarray(...)` in a loop does not count
        the buffer it replaces (Python frees it only after the new one exists)."""
        if self.sbuf_live > self.sbuf_peak:
            self.sbuf_peak = self.sbuf_live

    def place_sbuf(self, span: tuple[int, int]) -> None:
        """An SBUF tensor created at an explicit `address=` holds its byte span of each partition: tensors placed
        on the same bytes (nki-library's modular allocator rotates per-group tiles through a few slots) count
        once, as the union of the live spans."""
        n = self.sbuf_spans.get(span, 0)
        self.sbuf_spans[span] = n + 1
        if n == 0:
            self._respan()

    def unplace_sbuf(self, span: tuple[int, int]) -> None:
        n = self.sbuf_spans.get(span, 0) - 1
        if n > 0:
            self.sbuf_spans[span] = n
        elif n == 0:
            del self.sbuf_spans[span]
            self._respan()

    def _respan(self) -> None:
        union, end = 0, None
        for lo, hi in sorted(self.sbuf_spans):
            if end is None or lo >= end:
                union, end = union + hi - lo, hi
            elif hi > end:
                union, end = union + hi - end, hi
        self.sbuf_live += union - self.sbuf_spanned
        self.sbuf_spanned = union

    def free_onchip(self, buffer: str, amount: int) -> None:
        if buffer == "sbuf":
            self.sbuf_live -= amount


# the flag the static rule shared-hbm-nested also reads (evidence.static keeps no dependency on the simulator)
SKIP_NESTED_SHARED_HBM = "skip-non-top-level-shared-hbm-check"


def skips_nested_shared_hbm_check(kernel) -> bool:
    """Whether a decorated kernel (`nki.jit(..., experimental_flags=...)`) switches off the compiler's check
    that shared_hbm tensors are created at the kernel's top level (nki-library's dispatchers do)."""
    flags = (getattr(kernel, "options", None) or {}).get("experimental_flags")
    return isinstance(flags, str) and SKIP_NESTED_SHARED_HBM in flags


_current: State | None = None
_loading = "trn2"
# NEURON_PLATFORM_TARGET_OVERRIDE values (nki 0.3+): trn1/gen2, trn2/gen3, trn3/gen4
PLATFORM_TARGETS = {"trn1": "trn1", "gen2": "trn1", "inf2": "inf2", "trn2": "trn2", "gen3": "trn2",
                    "trn3": "trn3", "gen4": "trn3"}


def loading_target() -> str:
    """The target a kernel module sees while it is loaded (module-level code reads tile sizes)."""
    return _loading


def set_loading_target(target: str) -> str:
    global _loading
    prev, _loading = _loading, target
    return prev


def current() -> State:
    if _current is None:
        raise SimulationError(
            "err_nki_api_outside_of_nki_kernel",
            "NKI API used outside a kernel run; call it from a function run by evidence.nki.simulate",
        )
    return _current


def get() -> State | None:
    return _current


def set_current(st: State | None) -> State | None:
    global _current
    prev, _current = _current, st
    return prev
