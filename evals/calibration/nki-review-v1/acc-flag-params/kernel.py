"""y = relu?(x * scale + shift) of an fp32 matrix, with Python parameters that shape the trace.

scale and shift arrive as Python floats, `block` as a (rows, cols) tuple from the manifest; the
ReLU and the output dtype are Python flags with defaults. Row blocks of block[0] = 128 rows (the
last one masked: the row count is arbitrary), column blocks of block[1] = 512 fp32 (2 KiB per
partition per transfer). One ScalarE activation computes x * scale + shift, with the ReLU when
asked for; the flags decide at trace time which instruction is emitted.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def affine_kernel(x, scale, shift, block=(128, 512), apply_relu=False, out_dtype=None):
    rows, cols = x.shape
    bp, bf = block
    assert bp == nl.tile_size.pmax and cols % bf == 0, "blocks of 128 rows; cols a multiple of the column block"
    if out_dtype is None:
        out_dtype = x.dtype
    out = nl.ndarray((rows, cols), dtype=out_dtype, buffer=nl.shared_hbm)
    shift_tile = nl.full((bp, 1), shift, dtype=nl.float32)
    op = nl.relu if apply_relu else nl.copy

    i_p = nl.arange(bp)[:, None]
    i_f = nl.arange(bf)[None, :]
    for t in nl.affine_range((rows + bp - 1) // bp):
        r = t * bp + i_p
        inside = r < rows
        for c in nl.affine_range(cols // bf):
            tile = nl.load(x[r, c * bf + i_f], mask=inside)
            y = nisa.activation(op=op, data=tile, scale=scale, bias=shift_tile, dtype=out_dtype, mask=inside)
            nl.store(out[r, c * bf + i_f], value=y, mask=inside)
    return out
