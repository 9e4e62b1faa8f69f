import numpy as np


def gelu_ref(x):
    v = x.astype(np.float64)
    return (0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (v + 0.044715 * v ** 3)))).astype(np.float32)
