import numpy as np


def affine_ref(x, scale, shift, block):
    assert tuple(block) == (128, 512)
    return (x.astype(np.float64) * scale + shift).astype(np.float32)
