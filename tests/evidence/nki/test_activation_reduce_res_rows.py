"""`nisa.activation(..., reduce_res=...)` on a tail tile whose reduce_res column has more partitions than the data
(nki-library's router top-k keeps one [128, 1] column per token tile and passes it for a 72-row tail): the
instruction's partitions write the column's leading ones. The simulator raised numpy's reshape ValueError from its
own code; a column with fewer partitions than the data stays an error at the kernel's line. Kernel written here."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate
from evidence.nki.errors import SimulationError

TAIL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_exp_sums(x, column=128):
    T, E = x.shape
    out = nl.ndarray((column, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    e = nl.ndarray((T, E), dtype=nl.float32, buffer=nl.sbuf)
    sums = nl.ndarray((column, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=sums, value=-1.0)
    nisa.activation(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums)
    nisa.dma_copy(dst=out, src=sums)
    return out
'''


def test_a_reduce_res_column_longer_than_the_data_gets_the_data_rows_and_keeps_the_rest():
    x = np.random.default_rng(5).standard_normal((72, 64)).astype(np.float32)
    mod = load_kernel(TAIL, display="tail.py")
    got = simulate(mod.row_exp_sums, x).outputs[0]
    np.testing.assert_allclose(got[:72, 0], np.exp(x.astype(np.float64)).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(got[72:, 0], -1.0)


def test_a_reduce_res_column_shorter_than_the_data_is_a_partition_mismatch_at_the_kernel_line():
    x = np.random.default_rng(5).standard_normal((72, 64)).astype(np.float32)
    mod = load_kernel(TAIL, display="tail.py")
    try:
        simulate(mod.row_exp_sums, x, column=64)
    except SimulationError as exc:
        assert (exc.code, exc.line) == ("err_num_partition_mismatch", 16), (exc.code, exc.line, exc.message)
    else:
        raise AssertionError("a 64-row reduce_res for 72 data rows ran")
