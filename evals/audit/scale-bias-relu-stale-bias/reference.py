import numpy as np


def scale_bias_relu_ref(x, scale, bias):
    v = x.astype(np.float64) * scale.astype(np.float64)[:, None] + bias.astype(np.float64)[:, None]
    return np.maximum(v, 0.0).astype(np.float32)
