import numpy as np


def matmul_ref(lhsT, rhs):
    # Same bf16 inputs, exact fp32 products and sums: the hardware's accumulation, modulo order.
    return lhsT.astype(np.float32).T @ rhs.astype(np.float32)
