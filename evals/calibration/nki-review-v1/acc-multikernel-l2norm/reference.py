import numpy as np


def l2norm_ref(x, eps=1e-6):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt(np.sum(x64 * x64, axis=1, keepdims=True) + eps)).astype(np.float32)
