"""Transpose a [R, C] matrix (C <= 128) two ways, with a plain Python ``range`` loop.

1. TensorE: ``nc_matmul(stationary=x_tile, moving=I)`` computes x_tile^T @ I, i.e. the
   transposed tile, against an identity from ``nl.shared_identity_matrix`` loaded once.
2. DMA: ``nisa.dma_transpose`` reads the HBM tile already transposed into SBUF.
Both are exact for fp32.  The Python ``range`` loop is traced like ``sequential_range``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

# Static findings this kernel has on purpose (shows a DMA transpose inside a plain Python range loop on purpose).
EXPECTED_FINDINGS = ["nki.load-transpose-in-loop", "nki.sequential-without-dependency"]
KERNEL = "transpose_pe_dma_kernel"
REFERENCE = "transpose_pe_dma_ref"


@nki.jit
def transpose_pe_dma_kernel(x):
    R, C = x.shape
    via_pe = nl.ndarray((C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    via_dma = nl.ndarray((C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    identity = nl.load(nl.shared_identity_matrix(n=128, dtype=nl.float32))
    for t in range(R // 128):
        x_tile = nl.load(x[t * 128:(t + 1) * 128, :])
        xT = nisa.nc_matmul(stationary=x_tile, moving=identity)
        nl.store(via_pe[:, t * 128:(t + 1) * 128], value=nl.copy(xT, dtype=x.dtype))
        xT_dma = nisa.dma_transpose(x[t * 128:(t + 1) * 128, :], axes=(1, 0))
        nl.store(via_dma[:, t * 128:(t + 1) * 128], value=xT_dma)
    return via_pe, via_dma


def transpose_pe_dma_ref(x):
    t = np.ascontiguousarray(x.T)
    return t, t.copy()


CASES = [
    {
        "name": "fp32_256x96",
        "inputs": [{"name": "x", "shape": [256, 96], "dtype": "float32"}],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
