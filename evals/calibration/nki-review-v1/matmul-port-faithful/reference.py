import numpy as np


def matmul_ref(A, B):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
