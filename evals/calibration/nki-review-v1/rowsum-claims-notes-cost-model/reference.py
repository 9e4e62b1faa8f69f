import numpy as np


def rowsum_ref(x):
    return x.astype(np.float64).sum(axis=1).astype(np.float32)
