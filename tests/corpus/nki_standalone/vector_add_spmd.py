"""Element-wise add over a 2-D SPMD grid, nki 0.3+ style: each instance takes the [128, stripe]
block of ``nl.program_id(0)``, ``nl.program_id(1)`` and writes it into the trailing output argument."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "add_spmd_kernel"
REFERENCE = "add_spmd_ref"


@nki.jit
def add_spmd_kernel(a_input, b_input, c_output):
    row_block = nl.program_id(0)
    col_block = nl.program_id(1)
    stripe = a_input.shape[1] // nl.num_programs(1)
    rows = nl.ds(row_block * 128, 128)
    cols = nl.ds(col_block * stripe, stripe)
    a_tile = nl.load(a_input[rows, cols])
    b_tile = nl.load(b_input[rows, cols])
    c_tile = nl.ndarray((128, stripe), dtype=c_output.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.add)
    nl.store(c_output[rows, cols], value=c_tile)


def add_spmd_ref(a, b):
    return (a.astype(np.float64) + b.astype(np.float64)).astype(np.float32)


CASES = [
    {"name": "grid3x2_384x1024", "grid": [3, 2], "inputs": [
        {"name": "a", "shape": [384, 1024], "dtype": "float32"},
        {"name": "b", "shape": [384, 1024], "dtype": "float32", "dist": "uniform", "low": -3.0, "high": 3.0}],
     "outputs": [{"name": "c", "shape": [384, 1024], "dtype": "float32"}]},
    {"name": "grid2x1_256x256", "grid": [2, 1], "inputs": [
        {"name": "a", "shape": [256, 256], "dtype": "float32"},
        {"name": "b", "shape": [256, 256], "dtype": "float32"}],
     "outputs": [{"name": "c", "shape": [256, 256], "dtype": "float32"}]},
]
