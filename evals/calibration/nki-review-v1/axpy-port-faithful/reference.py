import numpy as np


def axpy_ref(a, x, y):
    return (a * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
