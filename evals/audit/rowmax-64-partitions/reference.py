import numpy as np


def rowmax_ref(x):
    return x.max(axis=1, keepdims=True).astype(np.float32)
