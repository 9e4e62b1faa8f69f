"""The numpy meaning (in fp32) of every NKI element-wise function, by name.

Op arguments of nisa instructions (`op=nl.exp`, `op0=np.add`, `reduce_op=nl.max`) are mapped
here by name, whether the kernel passes an `nl` function or a numpy ufunc.
"""

from __future__ import annotations

import math

import numpy as np

_SQRT2 = np.float32(math.sqrt(2.0))
_2_SQRTPI = np.float32(2.0 / math.sqrt(math.pi))


def erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 absolute (Abramowitz & Stegun 7.1.26 refined in float64); no scipy needed."""
    z = np.asarray(x, dtype=np.float64)
    t = 1.0 / (1.0 + 0.5 * np.abs(z))
    # Numerical Recipes erfc Chebyshev fit, fractional error < 1.2e-7
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(z >= 0, 1.0 - erfc, erfc - 1.0).astype(np.float32)


def _sigmoid(x):
    return (0.5 * (np.tanh(0.5 * x) + 1.0)).astype(np.float32)


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / _SQRT2))


def _gelu_dx(x):
    return 0.5 * (1.0 + erf(x / _SQRT2)) + x * np.exp(-0.5 * x * x) / np.float32(math.sqrt(2 * math.pi))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (x + np.float32(0.044715) * x * x * x)))


def _silu_dx(x):
    s = _sigmoid(x)
    return s * (1 + x * (1 - s))


def _softplus(x):
    return np.logaddexp(np.float32(0), x)


UNARY = {
    "abs": np.abs, "negative": np.negative, "sign": np.sign, "trunc": np.trunc, "floor": np.floor,
    "ceil": np.ceil, "exp": np.exp, "log": np.log, "cos": np.cos, "sin": np.sin, "tan": np.tan,
    "tanh": np.tanh, "arctan": np.arctan, "sqrt": np.sqrt, "rsqrt": lambda x: np.float32(1) / np.sqrt(x),
    "reciprocal": lambda x: np.float32(1) / x, "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, np.float32(0)),
    "gelu": _gelu, "gelu_dx": _gelu_dx, "gelu_apprx_tanh": _gelu_tanh,
    "gelu_apprx_sigmoid": lambda x: x * _sigmoid(np.float32(1.702) * x), "silu": lambda x: x * _sigmoid(x),
    "silu_dx": _silu_dx, "erf": erf, "erf_dx": lambda x: _2_SQRTPI * np.exp(-x * x), "softplus": _softplus,
    "mish": lambda x: x * np.tanh(_softplus(x)), "square": np.square, "copy": lambda x: x,
    "identity": lambda x: x, "invert": np.invert, "logical_not": np.logical_not,
}
INT_UNARY = {"invert", "logical_not", "abs", "negative", "sign", "square", "copy", "identity"}

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "mod": np.mod, "fmod": np.fmod,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "less": np.less, "less_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
# ALU operators of the tensor_scalar family that take no operand: `op0=nl.abs, operand0=0.0` is the per-row
# absmax idiom of fp8 quantisation (REFERENCE lists abs among the Vector/Scalar ALU operators)
OPERAND_FREE = {"abs": lambda x, _operand: np.abs(x)}
SCALAR_ALU = {**BINARY, **OPERAND_FREE}
BOOL_RESULT = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
               "logical_and", "logical_or", "logical_xor", "logical_not"}
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"}
INT_OK = BITWISE | {"add", "subtract", "multiply", "maximum", "minimum", "mod", "fmod"} | BOOL_RESULT

# reduction name -> numpy reducer
REDUCE = {
    "add": np.sum, "sum": np.sum, "max": np.max, "maximum": np.max, "amax": np.max, "min": np.min,
    "minimum": np.min, "amin": np.min, "multiply": np.prod, "prod": np.prod, "mean": np.mean,
    "bitwise_or": np.bitwise_or.reduce, "bitwise_and": np.bitwise_and.reduce, "bitwise_xor": np.bitwise_xor.reduce,
    "logical_and": np.all, "logical_or": np.any, "all": np.all, "subtract": np.sum,
}
_ALIASES = {"true_divide": "divide", "power": "power", "absolute": "abs", "reciprocal": "reciprocal"}


def op_name(fn) -> str:
    """Name of an op argument: an nl shim function, a numpy ufunc/function, or a string."""
    if fn is None:
        return "identity"
    if isinstance(fn, str):
        return fn
    name = getattr(fn, "_nki_op", None) or getattr(fn, "__name__", None)
    if name is None:
        raise ValueError(f"cannot use {fn!r} as an NKI op")
    return _ALIASES.get(name, name)
