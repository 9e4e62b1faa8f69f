"""Every constraint check: a small failing kernel, asserting the error code AND the kernel line."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from evidence.nki import KernelError, SimulationError, UnsupportedOpError

from .conftest import marked_line, run_source

A = np.ones((256, 512), np.float32)
B = np.ones((128, 512), np.float32)

# (case id, kernel body, args, expected error code)
ERRORS = [
    ("sbuf_partitions", """
        def kernel(a):
            t = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)  # <-
            return a
     """, (B,), "err_num_partition_exceed_arch_limit"),
    ("load_partitions", """
        def kernel(a):
            t = nl.load(a)  # <-
            return a
     """, (A,), "err_num_partition_exceed_arch_limit"),
    ("psum_tile_too_big", """
        def kernel(a):
            acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)  # <-
            return a
     """, (B,), "err_size_of_dimension_exceed_arch_limit"),
    ("matmul_stationary_free", """
        def kernel(a):
            x = nl.load(a[0:128, 0:256])
            y = nl.load(a[0:128, 0:256])
            r = nisa.nc_matmul(x, y)  # <-
            return a
     """, (B,), "err_size_of_dimension_exceed_arch_limit"),
    ("matmul_moving_free", """
        def kernel(a, b):
            x = nl.load(a[0:128, 0:128])
            y = nl.ndarray((128, 1024), dtype=nl.float32)
            y[:, 0:512] = nl.load(a)
            y[:, 512:1024] = nl.load(a)
            r = nl.matmul(x, y, transpose_x=True)  # <-
            return b
     """, (B, B), "err_size_of_dimension_exceed_arch_limit"),
    ("matmul_k_mismatch", """
        def kernel(a):
            x = nl.load(a[0:128, 0:128])
            y = nl.load(a[0:64, 0:512])
            r = nl.matmul(x, y, transpose_x=True)  # <-
            return a
     """, (B,), "err_num_partition_mismatch"),
    ("compute_on_hbm", """
        def kernel(a):
            r = nl.exp(a)  # <-
            return a
     """, (B,), "err_unsupported_memory"),
    ("load_from_sbuf", """
        def kernel(a):
            t = nl.load(a)
            u = nl.load(t)  # <-
            return a
     """, (B,), "err_unsupported_memory"),
    ("store_into_sbuf", """
        def kernel(a):
            t = nl.load(a)
            u = nl.ndarray((128, 512), dtype=nl.float32)
            nl.store(u, value=t)  # <-
            return a
     """, (B,), "err_unsupported_memory"),
    ("rank_one_tile", """
        def kernel(a):
            t = nl.ndarray((128,), dtype=nl.float32)  # <-
            return a
     """, (B,), "err_insufficient_rank"),
    ("reduce_partition_axis", """
        def kernel(a):
            t = nl.load(a)
            s = nl.sum(t, axis=0)  # <-
            return a
     """, (B,), "err_unsupported_reduce_axis"),
    ("tensor_reduce_not_last_axis", """
        def kernel(a):
            t = nl.load(a.reshape((128, 8, 64)))
            s = nisa.tensor_reduce(np.add, t, axis=[1])  # <-
            return a
     """, (B,), "err_unsupported_reduce_axis"),
    ("tensor_tensor_partitions", """
        def kernel(a):
            x = nl.load(a)
            y = nl.load(a[0:1, :])
            z = nisa.tensor_tensor(x, y, op=np.add)  # <-
            return a
     """, (B,), "err_num_partition_mismatch"),
    ("binary_partitions", """
        def kernel(a):
            x = nl.load(a)
            y = nl.load(a[0:64, :])
            z = nl.add(x, y)  # <-
            return a
     """, (B,), "err_num_partition_mismatch"),
    ("store_into_immutable_input", """
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            nl.store(a, value=t)  # <-
            nl.store(out, value=t)
            return out
     """, (B,), "err_cannot_update_immutable_parameter"),
    ("shared_hbm_in_loop", """
        def kernel(a):
            for i in nl.affine_range(2):
                out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)  # <-
            return out
     """, (B,), "err_shared_hbm_must_in_kernel_level"),
    ("hbm_with_init_value", """
        def kernel(a):
            out = nl.zeros(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)  # <-
            return out
     """, (B,), "err_hbm_tensor_with_init_value_not_supported"),
    ("out_of_bounds", """
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(600)[None, :]
            t = nl.load(a[i_p, i_f])  # <-
            return a
     """, (B,), "err_tensor_access_out_of_bound"),
    ("slice_out_of_bounds", """
        def kernel(a):
            t = nl.load(a[0:128, 0:1024])  # <-
            return a
     """, (B,), "err_tensor_access_out_of_bound"),
    ("mixed_indexing", """
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            t = nl.load(a[i_p, 0:512])  # <-
            return a
     """, (B,), "err_unsupported_mixing_basic_advanced_tensor_indexing"),
    ("unlifted_arange", """
        def kernel(a):
            t = nl.load(a[nl.arange(128), nl.arange(512)])  # <-
            return a
     """, (B,), "err_1d_arange_not_supported"),
    ("transpose_too_big", """
        def kernel(a):
            t = nl.load(a)
            u = nl.transpose(t)  # <-
            return a
     """, (B,), "err_size_of_dimension_exceed_arch_limit"),
    ("vector_transpose_too_big", """
        def kernel(a):
            t = nl.load(a[0:64, 0:64])
            u = nisa.nc_transpose(t, engine=nisa.vector_engine)  # <-
            return a
     """, (B,), "err_size_of_dimension_exceed_arch_limit"),
    ("bn_stats_too_wide", """
        def kernel(a):
            t = nl.load(a[0:128, :].reshape((128, 512)))
            u = nl.ndarray((128, 1024), dtype=nl.float32)
            u[:, 0:512] = t
            u[:, 512:1024] = t
            s = nisa.bn_stats(u)  # <-
            return a
     """, (B,), "err_size_of_dimension_exceed_arch_limit"),
    ("tile_truth_value", """
        def kernel(a):
            t = nl.load(a)
            if t:  # <-
                pass
            return a
     """, (B,), "err_ambiguous_tensor_truth_value"),
    ("activation_bias_shape", """
        def kernel(a):
            t = nl.load(a)
            r = nisa.activation(op=nl.exp, data=t, bias=t)  # <-
            return a
     """, (B,), "err_activation_bias_invalid_type"),
    ("block_dims_to_compute", """
        def kernel(a):
            t = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32)
            t[0] = nl.load(a)
            t[1] = nl.load(a)
            u = nl.exp(t)  # <-
            return a
     """, (B,), "err_failed_to_infer_tile_from_local_tensor"),
    ("local_gather_index_dtype", """
        def kernel(a):
            t = nl.load(a[0:128, 0:64])
            i = nl.load(a[0:128, 0:2])
            g = nisa.local_gather(t, i)  # <-
            return a
     """, (B,), "err_unsupported_dtype"),
    ("local_gather_partitions", """
        def kernel(a, idx):
            t = nl.load(a[0:40, 0:64])
            g = nisa.local_gather(t, nl.load(idx[0:40, :]))  # <-
            return a
     """, (B, np.zeros((128, 2), np.uint16)), "err_invalid_local_gather_shape"),
    ("local_gather_out_of_range", """
        def kernel(a, idx):
            g = nisa.local_gather(nl.load(a[:, 0:64]), nl.load(idx), num_elem_per_idx=4)  # <-
            return a
     """, (B, np.full((128, 2), 62, np.uint16)), "err_index_out_of_bound"),
    ("range_select_on_false", """
        def kernel(a, lo):
            t = nl.load(a)
            b = nl.load(lo)
            r = nisa.range_select(t, np.greater_equal, np.less, b, b, on_false_value=0.0)  # <-
            return a
     """, (B, np.zeros((128, 1), np.float32)), "err_invalid_on_false_value"),
    ("select_reduce_float_predicate", """
        def kernel(a):
            t = nl.load(a)
            d = nl.ndarray((128, 512), dtype=nl.float32)
            nisa.select_reduce(dst=d, predicate=t, on_true=t, on_false=0.0)  # <-
            return a
     """, (B,), "err_unsupported_dtype"),
]


@pytest.mark.parametrize("body,args,code", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_constraint_error_names_code_and_line(body, args, code):
    with pytest.raises(SimulationError) as info:
        run_source(body, "kernel", *args)
    _, src = None, None
    from .conftest import kernel_source

    src = kernel_source(body)
    err = info.value
    assert err.code == code, err
    assert err.file == "k.py"
    assert err.line == marked_line(src), err


def test_unsupported_op_names_the_op_and_the_table():
    body = """
        def kernel(a):
            t = nl.load(a)
            u = nisa.quantize_mx(t, t)  # <-
            return a
    """
    with pytest.raises(UnsupportedOpError) as info:
        run_source(body, "kernel", B)
    from .conftest import kernel_source

    assert info.value.line == marked_line(kernel_source(body))
    assert "nisa.quantize_mx" in info.value.message and "evidence/nki/ops" in info.value.message



def test_a_tile_method_the_simulator_lacks_is_unsupported_not_a_kernel_bug():
    """A tensor method of NKI's tile API with no simulation stops the run as `unsupported_op` naming the
    method and the line (a simulator limit), not as the kernel's own AttributeError; code asking
    `hasattr` still sees a missing attribute."""
    body = """
        def kernel(a):
            t = nl.load(a)
            assert not hasattr(t, "gather_columns") and getattr(t, "gather_columns", None) is None
            picked = t.gather_columns(t, count=8)  # <-
            return a
    """
    with pytest.raises(UnsupportedOpError) as info:
        run_source(body, "kernel", B)
    from .conftest import kernel_source

    assert info.value.code == "unsupported_op" and info.value.line == marked_line(kernel_source(body))
    assert "'.gather_columns'" in info.value.message

def test_python_error_in_kernel_reports_its_line():
    body = """
        def kernel(a):
            t = nl.load(a)
            x = 1 / 0  # <-
            return a
    """
    with pytest.raises(KernelError) as info:
        run_source(body, "kernel", B)
    from .conftest import kernel_source

    assert info.value.code == "python_error" and "ZeroDivisionError" in info.value.message
    assert info.value.line == marked_line(kernel_source(body))


def test_nested_kernel_with_grid():
    body = """
        @nki.jit
        def inner(a):
            return a

        def kernel(a):
            inner[2](a)  # <-
            return a
    """
    with pytest.raises(SimulationError) as info:
        run_source(body, "kernel", B)
    assert info.value.code == "err_nested_kernel_with_spmd_grid"


# --- non-fatal findings (reported, never raised) ---------------------------------------------------

def _findings(body, *args, **kw):
    from .conftest import kernel_source

    sim, src = run_source(body, "kernel", *args, **kw)
    return {(f.code, f.line) for f in sim.report.findings}, kernel_source(body), sim


def test_affine_range_output_dependency_is_a_finding_with_line():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(2):
                t = nl.load(a[i * 128:(i + 1) * 128, :])
                nl.store(out[0:128, :], value=t)  # <-
            return out
    """
    found, src, _ = _findings(body, A)
    assert ("err_unexpected_output_dependencies", marked_line(src)) in found


def test_sequential_range_and_indexed_writes_have_no_dependency_finding():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            out2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for i in nl.sequential_range(2):
                t = nl.load(a[i * 128:(i + 1) * 128, :])
                nl.store(out[0:128, :], value=t)
            for i in nl.affine_range(2):
                for j in nl.affine_range(2):
                    t = nl.load(a[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256])
                    nl.store(out2[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256], value=t)
            return out, out2
    """
    found, _, sim = _findings(body, A)
    # the sequential loop's first store is overwritten unread: wasted traffic, not a dependency error
    assert {code for code, _ in found} == {"hbm_store_overwritten"}
    assert "256.0 KiB of the 1.0 MiB" in sim.report.findings[0].message


def test_spmd_instances_writing_the_same_location():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a[0:128, :])
            nl.store(out, value=t)  # <-
            return out
    """
    found, src, _ = _findings(body, A, grid=(2,))
    assert ("err_unexpected_output_dependencies", marked_line(src)) in found


def test_uninitialised_read_is_a_finding_with_line():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((128, 512), dtype=nl.float32)
            buf[:, 0:256] = nl.load(a[:, 0:256])
            r = nl.exp(buf)  # <-
            nl.store(out, value=r)
            return out
    """
    found, src, sim = _findings(body, B)
    assert ("uninitialized_read", marked_line(src)) in found
    assert np.isnan(sim.outputs[0][:, 256:]).all() and not np.isnan(sim.outputs[0][:, :256]).any()


def test_sbuf_and_psum_capacity_are_findings_not_errors():
    body = """
        def kernel(a):
            big = []
            for i in nl.static_range(40):
                big.append(nl.zeros((128, 2048), nl.float32))
            banks = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(9)]
            last = nl.load(a)  # peaks are sampled between instructions
            total = nl.zeros((128, 512), nl.float32)
            for bank in banks:  # each PSUM tile is live from its zero fill to this read
                total[...] = nl.add(total, bank)
            return a
    """
    found, _, sim = _findings(body, B, target="trn1")
    codes = {c for c, _ in found}
    assert {"sbuf_capacity_exceeded", "psum_capacity_exceeded"} <= codes
    assert sim.report.sbuf_peak_bytes_per_partition >= 40 * 8192
    assert sim.report.sbuf_usable_bytes_per_partition == 180224
    assert sim.report.psum_peak_banks == 9


def test_output_not_written_and_partially_written():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)  # <-
            out2 = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out2[:, 0:100], value=nl.load(a[:, 0:100]))
            return out, out2
    """
    found, src, _ = _findings(body, B)
    line = marked_line(src)
    assert {("err_tensor_output_not_written_to", line), ("output_not_fully_written", line + 1)} <= found


def test_valid_kernels_get_no_findings_or_errors():
    body = """
        def kernel(a, b):
            out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            for m in nl.affine_range(2):
                acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(4):
                    x = nl.load(b[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                    y = nl.load(a[k * 128:(k + 1) * 128, :])
                    acc += nl.matmul(x, y, transpose_x=True)
                nl.store(out[m * 128:(m + 1) * 128, :], value=nl.copy(acc))
            return out
    """
    a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((512, 256)).astype(np.float32)
    found, _, sim = _findings(body, a, b)
    assert not found
    np.testing.assert_allclose(sim.outputs[0], b.T.astype(np.float64) @ a, rtol=1e-4, atol=1e-3)


def test_accumulating_dma_into_the_same_output_is_not_a_dependency():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.zeros((128, 512), nl.float32))
            for i in nl.affine_range(2):
                t = nl.load(a[i * 128:(i + 1) * 128, :])
                nisa.dma_copy(dst=out, src=t, dst_rmw_op=np.add)
            return out
    """
    found, _, sim = _findings(body, A)
    assert not found
    np.testing.assert_array_equal(sim.outputs[0], 2.0)


def test_partition_start_rule_is_a_finding():
    body = """
        def kernel(a):
            out = nl.ndarray((64, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            ok = nl.exp(t[64:128, :])
            bad = nl.exp(t[32:96, :])  # <-
            nl.store(out, value=nl.add(ok, bad))
            return out
    """
    found, src, _ = _findings(body, B)
    assert found == {("partition_start_rule", marked_line(src))}



def test_partition_start_rule_binds_compute_engines_not_dma():
    """DMA transfers address any partition: rows loaded one at a time into partitions 1, 2, 3 of a
    tile are legal. A compute result delivered to partitions 8-15 is not."""
    body = """
        def kernel(a):
            out = nl.ndarray((2, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            rows = nl.ndarray((4, 512), dtype=a.dtype, buffer=nl.sbuf)
            for r in nl.static_range(4):
                rows[r:r + 1, :] = nl.load(a[r:r + 1, :])
            nl.store(out, value=rows[1:3, :])
            sq = nl.ndarray((16, 512), dtype=a.dtype, buffer=nl.sbuf)
            sq[8:16, :] = nl.square(nl.load(a[0:8, :]))  # <-
            return out
    """
    found, src, sim = _findings(body, A)
    assert found == {("partition_start_rule", marked_line(src))}
    np.testing.assert_array_equal(sim.outputs[0], 1.0)


def test_partition_start_rule_in_the_standalone_dialect_skips_dma_copy():
    from evidence.nki import load_kernel, simulate

    src = textwrap.dedent("""\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def kernel(a):
            out = nl.ndarray((4, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            rows = nl.ndarray((4, 512), dtype=a.dtype, buffer=nl.sbuf)
            for r in range(4):
                nisa.dma_copy(dst=rows[r:r + 1, :], src=a[r:r + 1, :])
            twice = nl.ndarray((4, 512), dtype=a.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=twice[2:4, :], data=rows[2:4, :], op0=nl.multiply, operand0=2.0)  # <-
            nisa.tensor_copy(dst=twice[0:2, :], src=rows[0:2, :])
            nisa.dma_copy(dst=out, src=twice)
            return out
    """)
    sim = simulate(load_kernel(src, display="k.py").kernel, A[:4].copy())
    lines = {(f.code, f.line) for f in sim.report.findings}
    assert lines == {("partition_start_rule", marked_line(src))}  # the VectorE instruction on partitions 2-3
    np.testing.assert_array_equal(sim.outputs[0], [[1.0] * 512] * 2 + [[2.0] * 512] * 2)

def test_range_select_needs_trn2_and_collectives_need_one_rank():
    body = """
        def kernel(a, lo):
            t = nl.load(a)
            b = nl.load(lo)
            r = nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less, bound0=b, bound1=b)  # <-
            return a
    """
    lo = np.zeros((128, 1), np.float32)
    with pytest.raises(SimulationError) as info:
        run_source(body, "kernel", B, lo, target="trn1")
    assert info.value.code == "err_unsupported_on_target" and "trn1" in info.value.message
    run_source(body, "kernel", B, lo, target="trn2")  # the same kernel runs on trn2

    body = """
        def kernel(a):
            t = nl.load(a)
            s = nl.all_reduce(t, op=np.add, program_axes=[0])  # <-
            return a
    """
    from .conftest import kernel_source

    with pytest.raises(UnsupportedOpError) as info:
        run_source(body, "kernel", B, grid=(2,))
    assert info.value.line == marked_line(kernel_source(body))
    assert "all_reduce" in info.value.message and "2 SPMD instances" in info.value.message
    sim, _ = run_source(body, "kernel", B)  # one instance: the reduction over one rank is the identity
    assert not [f for f in sim.report.findings if f.severity in ("high", "critical")]


def test_trn3_takes_wide_matmuls_and_its_own_sbuf_size():
    """NeuronCore-v4 (REFERENCE §2): moving operands up to 4096 fp32 columns, PSUM tiles over several banks,
    245752 usable SBUF bytes per partition; the same kernel is an error on trn2."""
    body = """
        def kernel(a, b):
            out = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
            x = nl.load(a)
            y = nl.load(b)
            acc = nl.zeros((128, 2048), dtype=nl.float32, buffer=nl.psum)
            acc += nisa.nc_matmul(x, y)  # <-
            nl.store(out, value=nl.copy(acc))
            assert nl.tile_size.total_available_sbuf_size == SBUF
            return out
    """
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((128, 128), np.float32), rng.standard_normal((128, 2048), np.float32)
    sim, _ = run_source(body.replace("SBUF", "245752"), "kernel", a, b, target="trn3")
    np.testing.assert_allclose(sim.returned, a.T @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(SimulationError) as info:
        run_source(body.replace("SBUF", "212984"), "kernel", a, b, target="trn2")
    assert info.value.code == "err_size_of_dimension_exceed_arch_limit"
