"""The `nl.*` / `nisa.*` names some documented NKI release has, in either dialect.

A union, deliberately generous: the beta `neuronxcc.nki` API reference (Neuron SDK 2.20-2.28), the standalone
`nki` package's (0.2-0.7, and the newer loop and register names its current docs show), REFERENCE.md §3, and
every name the simulator implements (a test keeps the simulator's names inside this list). A name missing here
is called "undocumented" only in the beta dialect, whose namespace is frozen; the standalone package still grows,
so a name it lacks today may be a newer release's. Calling a name no release has would fail to compile (an
AttributeError in the tracer): a defect of the kernel, not a limit of the simulator. Wrongly calling a real op
undocumented is worse than missing one, so when in doubt a name belongs here.
"""

from __future__ import annotations

LANGUAGE = frozenset({
    # memory and creation
    "load", "store", "load_transpose2d", "atomic_rmw", "copy", "ndarray", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "empty_like", "rand", "random_seed", "shared_constant", "shared_identity_matrix",
    # math
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "max", "min", "mean", "var", "sum", "prod",
    "all", "abs", "negative", "sign", "trunc", "floor", "ceil", "exp", "log", "cos", "sin", "tan", "tanh", "arctan",
    "sqrt", "rsqrt", "reciprocal", "sigmoid", "relu", "gelu", "gelu_dx", "gelu_apprx_tanh", "gelu_apprx_sigmoid",
    "silu", "silu_dx", "erf", "erf_dx", "softplus", "mish", "square", "softmax", "rms_norm", "dropout", "matmul",
    "transpose", "mod", "fmod",
    # bitwise and logical
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift", "equal", "not_equal",
    "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
    # tensor manipulation, search, collectives
    "ds", "arange", "mgrid", "expand_dims", "broadcast_to", "gather_flattened", "where", "all_reduce", "all_gather",
    "reduce_scatter", "all_to_all",
    # iterators and control flow
    "static_range", "affine_range", "sequential_range", "dynamic_range", "fori_loop", "while_loop", "if_else",
    "no_reorder",
    # memory hierarchy, SPMD, others
    "par_dim", "psum", "sbuf", "hbm", "private_hbm", "shared_hbm", "program_id", "num_programs", "program_ndim",
    "spmd_dim", "nc", "device_print", "loop_reduce", "tile_size", "fp32", "finfo", "iinfo",
    # data types
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "bfloat16", "tfloat32", "float32r", "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu",
    "float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4",
    # submodules, and the classes helper modules of public standalone kernels subclass or annotate with
    "constants", "NKIObject", "NkiTensor",
})

ISA = frozenset({
    # instructions
    "nc_matmul", "nc_matmul_mx", "quantize_mx", "nc_transpose", "activation", "activation_reduce", "tensor_reduce",
    "tensor_partition_reduce", "tensor_tensor", "tensor_tensor_scan", "scalar_tensor_tensor", "tensor_scalar",
    "tensor_scalar_reduce", "tensor_copy", "tensor_copy_dynamic_src", "tensor_copy_dynamic_dst",
    "tensor_copy_predicated", "reciprocal", "iota", "dropout", "affine_select", "range_select", "select_reduce",
    "sequence_bounds", "memset", "bn_stats", "bn_aggr", "local_gather", "dma_copy", "dma_transpose", "dma_compute",
    "max8", "nc_find_index8", "nc_match_replace8", "nc_stream_shuffle", "nc_n_gather", "nonzero_with_count",
    "core_barrier", "sendrecv", "register_alloc", "register_load", "register_move", "register_store",
    # targets, enums, engines
    "get_nc_version", "nc_version", "engine", "reduce_cmd", "dge_mode", "oob_mode", "matmul_perf_mode",
    "tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine", "dma_engine", "sync_engine", "unknown_engine",
    # submodules, and names public standalone kernels of nki-library call (control flow and registers, RNG)
    "constants", "VirtualRegister", "rng", "exp", "fori_loop", "while_loop",
})

NEWEST = "beta neuronxcc.nki of Neuron SDK 2.20-2.28, standalone nki 0.2-0.7"


def documented(name: str) -> bool:
    """Is `name` ("nl.exp" / "exp" for nki.language, "nisa.iota" for nki.isa) in some documented release?
    Private names (`_x`) are left alone: shipped, but nobody documents them."""
    space, _, attr = name.rpartition(".")
    if attr.startswith("_"):
        return True
    return attr in (ISA if space == "nisa" else LANGUAGE)


__all__ = ["ISA", "LANGUAGE", "NEWEST", "documented"]
