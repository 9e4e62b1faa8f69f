import numpy as np


def cumsum_ref(x):
    return np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)
