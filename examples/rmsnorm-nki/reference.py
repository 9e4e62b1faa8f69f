import numpy as np


def rmsnorm_ref(x, w, eps=1e-6):
    x32 = x.astype(np.float32)
    inv_rms = 1.0 / np.sqrt(np.mean(x32 * x32, axis=1, keepdims=True) + eps)
    return (x32 * inv_rms * w.astype(np.float32)[None, :]).astype(x.dtype)
