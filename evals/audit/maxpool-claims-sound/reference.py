import numpy as np


def maxpool_ref(x):
    C, H, W = x.shape
    return x.astype(np.float32).reshape(C, H // 2, 2, W // 2, 2).max(axis=(2, 4))
