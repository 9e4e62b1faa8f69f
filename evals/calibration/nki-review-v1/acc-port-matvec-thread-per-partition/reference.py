import numpy as np


def matvec_ref(x, w):
    return (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
