import numpy as np


def small_matmul_ref(a_t, b):
    return (a_t.astype(np.float64).T @ b.astype(np.float64)).astype(np.float32)
