import numpy as np


def rmsnorm_ref(x, gamma, eps=1e-6):
    x64 = x.astype(np.float64)
    inv_rms = 1.0 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + eps)
    return (x64 * inv_rms * gamma.astype(np.float64)[None, :]).astype(np.float32)
