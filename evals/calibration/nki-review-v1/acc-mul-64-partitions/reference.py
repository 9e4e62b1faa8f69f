import numpy as np


def mul_ref(x, y):
    return (x.astype(np.float64) * y.astype(np.float64)).astype(np.float32)
