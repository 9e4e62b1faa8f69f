"""C scalar types in CUDA source and the integer constant expressions sizes are written in.

`CTYPES` names the dtype of each scalar type, `SIZEOF` its bytes; `eval_int` folds a macro or
`constexpr` body (`(WARP_SIZE * 4)`, `(K * sizeof(half))`) given the names already known. Submitted
text is untrusted: expressions are parsed with `ast` only when they hold nothing but integers, names
and arithmetic, and both their length and their values are bounded.
"""

from __future__ import annotations

import ast
import re

CTYPES = {
    "__half": "float16", "half": "float16", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16",
    "float": "float32", "double": "float64", "int": "int32", "unsigned": "uint32", "int8_t": "int8",
    "uint8_t": "uint8", "char": "int8", "short": "int16", "long": "int64", "__half2": "float16", "size_t": "uint64",
    "uint": "uint32", "uint32_t": "uint32", "int32_t": "int32", "bool": "bool",
    # vector types: their element dtype; LANES says how many elements one holds
    "half2": "float16", "__nv_bfloat162": "bfloat16", "nv_bfloat162": "bfloat16", "float2": "float32",
    "float4": "float32", "double2": "float64", "int2": "int32", "int4": "int32", "uint2": "uint32", "uint4": "uint32",
}
LANES = {"__half2": 2, "half2": 2, "__nv_bfloat162": 2, "nv_bfloat162": 2, "float2": 2, "float4": 4, "double2": 2,
         "int2": 2, "int4": 4, "uint2": 2, "uint4": 4}
SIZEOF = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int32": 4, "uint32": 4, "int8": 1, "uint8": 1,
          "int16": 2, "int64": 8, "uint64": 8, "bool": 1}


def sizeof_bytes(text: str) -> int | None:
    """sizeof(<scalar type>) in bytes, None for anything else."""
    m = re.fullmatch(r"sizeof\s*\(\s*(?:const\s+)?([A-Za-z_]\w*)\s*\)", text.strip())
    size = SIZEOF.get(CTYPES.get(m.group(1), "")) if m else None
    return size * LANES.get(m.group(1), 1) if size is not None else None


def lanes_of(text: str) -> int:
    """Elements per value of the first C scalar or vector type named in `text` (`half2` -> 2)."""
    for word in re.findall(r"[A-Za-z_]\w*", text):
        if word in CTYPES:
            return LANES.get(word, 1)
    return 1


def eval_int(text: str, names: dict[str, int | None]) -> int | None:
    """The integer value of a macro body such as `(WARP_SIZE * WARPS_PER_BLOCK)` or
    `(CHUNK_K * K * sizeof(half))`; None when anything in it is not a known integer."""
    text = re.sub(r"sizeof\s*\(\s*(?:const\s+)?[A-Za-z_]\w*\s*\)", lambda m: str(sizeof_bytes(m.group(0))), text)
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", lambda m: str(int(m.group(1), 0)), text)
    if not re.fullmatch(r"[\w\s+\-*/%()<>]*", text) or not text.strip() or len(text) > 1000:
        return None  # (a size expression is short: a long one is not folded, nor parsed into a deep tree)
    try:
        tree = ast.parse(text.replace("/", "//"), mode="eval")
    except (SyntaxError, RecursionError):
        return None

    def ev(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return names.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = ev(node.operand)
            return -v if v is not None else None
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None or a < 0 or b < 0:
                return None
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b if b else None, ast.Mod: lambda: a % b if b else None,
                   ast.LShift: lambda: a << b if b < 64 else None, ast.RShift: lambda: a >> b}
            f = ops.get(type(node.op))
            v = f() if f else None
            # a macro chain squaring itself (`#define B (A*A)`, ...) would grow without bound: submitted
            # text is untrusted, and no real size needs more than 64 bits
            return v if v is None or v.bit_length() <= 64 else None
        return None

    try:
        return ev(tree.body)
    except RecursionError:  # thousands of nested parentheses: not a size anyone folds
        return None


def dtype_of(text: str) -> str | None:
    """The dtype of the first C scalar type named in `text` (`const __half* x` -> float16)."""
    for word in re.findall(r"[A-Za-z_]\w*", text):
        if word in CTYPES:
            return CTYPES[word]
    return None
