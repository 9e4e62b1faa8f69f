"""Element-wise exp of an fp32 matrix, one SPMD program instance per row.

The launch grid is [rows]; instance r loads row r as a [1, cols] tile, applies exp on ScalarE and
stores it back.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def exp_rows(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    r = nl.program_id(0)
    row = nl.load(x[r:r + 1, :])
    nl.store(y[r:r + 1, :], value=nisa.activation(op=nl.exp, data=row, dtype=x.dtype))
    return y
