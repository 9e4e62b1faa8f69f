"""RMSNorm in the standalone nki dialect (nki 0.3+, Neuron SDK 2.29 and later).

y = x * rsqrt(mean(x^2) + eps) * w over the last axis of x [rows, cols]. Each 128-row tile is
one DMA in; ScalarE squares it and sums each row into an fp32 column in the same instruction
(`reduce_res`); a second activation computes rsqrt(sum / cols + eps) with the scale and bias
fused; one VectorE instruction multiplies by that column and by the weight row, which was
broadcast across partitions once by a stride-0 access pattern. The ragged last tile is bounded
with slices (standalone nki has no masks).
"""

import nki
import nki.isa as nisa
import nki.language as nl
from tiling import RowTiling

EPS = 1e-6


@nki.jit
def rmsnorm(x, w):
    rows, cols = x.shape
    tiling = RowTiling(rows)
    P = tiling.partitions
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)

    w_tile = nl.ndarray((P, cols), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_tile, src=w.ap(pattern=[[0, P], [1, cols]]))  # one row, broadcast to P partitions
    eps = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=eps, value=EPS)

    for lo, n in tiling.tiles():
        xt = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:n, :], src=x[lo:lo + n, :])
        sq = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq[0:n, :], op=nl.square, data=xt[0:n, :], reduce_op=nl.add, reduce_res=sum_sq[0:n, :])
        inv_rms = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv_rms[0:n, :], op=nl.rsqrt, data=sum_sq[0:n, :], scale=1.0 / cols, bias=eps[0:n, :])
        y = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=y[0:n, :], data=xt[0:n, :], op0=nl.multiply, operand0=inv_rms[0:n, :],
                                  op1=nl.multiply, operand1=w_tile[0:n, :])
        nisa.dma_copy(dst=out[lo:lo + n, :], src=y[0:n, :])
    return out
