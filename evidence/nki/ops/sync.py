"""Synchronisation between the NeuronCores of a logical core: `nisa.core_barrier(data, cores)` (nki 0.3+,
NeuronCore-v3 or newer; `nki.lnc.core_barrier` from nki 0.8).

The simulator runs SPMD instances one after another, so when an instance passes the barrier every
earlier instance has finished. A barrier after which instances only read what they wrote themselves
(the documented use: both cores write disjoint parts of a shared output, then meet) is therefore
exact as a no-op; reads of another instance's part come out undefined and are reported as such.
What cannot be exact is a barrier over a kernel input, whose old values a later-running instance
could still read: that is `unsupported_op`, not evidence against the kernel.
"""

from __future__ import annotations

from evidence.nki.dispatch import Call
from evidence.nki.errors import UnsupportedOpError
from evidence.nki.ops.base import Op, table
from evidence.nki.tensor import Tensor


def check_core_barrier(st, data, cores=(0, 1), engine=None, name=None, **_):
    if st.nc_version < 3:
        raise st.error("err_unsupported_on_target", f"'core_barrier' needs NeuronCore-v3 or newer; target is {st.target}")
    if not isinstance(data, Tensor) or data.alloc.buffer != "shared_hbm":
        raise st.error("err_unsupported_memory", "'core_barrier' data must be a tensor in nl.shared_hbm")
    if tuple(int(c) for c in cores) != (0, 1):
        raise st.error("err_invalid_arguments", f"'core_barrier' supports cores=(0, 1) only, got {tuple(cores)}")
    instances = 1
    for g in st.grid:
        instances *= g
    if instances > 1 and data.alloc.param >= 0:
        file, line = st.where()
        raise UnsupportedOpError(
            "unsupported_op", "NKI API 'core_barrier' over a kernel input across SPMD instances is not simulated: "
            "instances run one after another, so a later one could read values the barrier orders", file, line)
    return Call("nisa.core_barrier", "gpsimd")


OPS = table(Op("nisa.core_barrier", check_core_barrier, None, None))
