"""Element-wise ops: the nl unary/binary lists and the nisa ALU instructions (REFERENCE §3.6-§3.7)."""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes, fp8_rounding, undefined
from evidence.nki.dispatch import Call
from evidence.nki.indexing import MaskExpr, full_mask
from evidence.nki.ops.base import (
    MIN_II, REDUCE_IDLE, Op, accumulate_registers, bshape, cost_gpsimd, cost_stream, cost_two_inputs, f32, free_size,
    fresh, lead_align, op_mask, reduce_command, reduced_mask, resolve_dtype, resolve_op, same_elements, same_partitions,
    scalar_alu_op, scalar_dtype, scalar_operand, scalar_value, set_result, table, tile, value,
)
from evidence.nki.ops.functions import BINARY, BITWISE, BOOL_RESULT, INT_OK, INT_UNARY, UNARY
from evidence.nki.product_batch import ONTO_ZEROS
from evidence.nki.tensor import Tensor

# activation's `reduce_op` given as a reduction function names the operator that accumulates it: nki-samples'
# kernels pass `reduce_op=np.sum` (their tests run it through the compiler), which is add
_ACTIVATION_REDUCE_OPS = {**BINARY, **{alias: BINARY[op] for alias, op in (("sum", "add"), ("max", "maximum"),
                                                                         ("amax", "maximum"), ("min", "minimum"),
                                                                         ("amin", "minimum"), ("prod", "multiply"))}}

SCALAR_ENGINE_UNARY = set(UNARY) - {"invert", "logical_not"}


def _operand(st, x, op, arg):
    if isinstance(x, Tensor):
        return tile(st, x, op, arg)
    if isinstance(x, (int, float, bool, np.generic)):
        return x
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x.item()
    raise st.error("err_invalid_operand", f"'{op}' cannot take {type(x).__name__} as '{arg}'")


def _values(xs, nd: int, as_int: bool, mask) -> list:
    out = []
    for x in xs:
        if isinstance(x, Tensor):
            v = x.read(mask)
            v = v if as_int else (v if v.dtype == np.float32 else v.astype(np.float32))
            out.append(lead_align(v, nd))
        else:
            out.append(x if as_int else np.float32(x))
    return out


def _is_int(x) -> bool:
    if isinstance(x, Tensor):
        return dtypes.is_int(x.dtype)
    return isinstance(x, (int, np.integer))


# --- nl unary ------------------------------------------------------------------------------

def unary(name: str) -> Op:
    engine = "scalar" if name in SCALAR_ENGINE_UNARY else "vector"

    def check(st, x, *, dtype=None, mask=None, **_):
        x = tile(st, x, name, "x")
        c = Call(name, engine)
        c.mask = op_mask(st, mask)
        default = dtypes.bool_ if name in BOOL_RESULT else x.dtype
        c.ins = [x]
        c.out = c.result = fresh(st, x.shape, resolve_dtype(st, dtype, default))
        return c

    def execute(st, c: Call) -> None:
        x = c.ins[0]
        as_int = name in INT_UNARY and dtypes.is_int(x.dtype) or name in BITWISE
        v = x.read(c.mask)
        set_result(c.out, UNARY[name](v if as_int else dtypes.to_f32(v)), c.mask)

    return Op(name, check, execute, cost_stream)


# --- nl binary -----------------------------------------------------------------------------

def binary(name: str) -> Op:
    fn = BINARY[name]

    def check(st, x, y, *, dtype=None, mask=None, **_):
        x, y = _operand(st, x, name, "x"), _operand(st, y, name, "y")
        tiles = [t for t in (x, y) if isinstance(t, Tensor)]
        if not tiles:
            raise st.error("err_invalid_operand", f"'{name}' needs at least one tile operand")
        c = Call(name, "vector")
        c.mask = op_mask(st, mask)
        shape = bshape(st, [t.shape for t in tiles], name) if len(tiles) == 2 else tiles[0].shape
        if name in BOOL_RESULT:
            default = dtypes.bool_
        else:
            default = dtypes.promote(scalar_dtype(x), scalar_dtype(y))
        c.ins = tiles
        c.p["xy"] = (x, y)
        for data, scale in ((x, y), (y, x)) if name == "multiply" else ((x, y),):
            if isinstance(data, Tensor):
                fp8_rounding.mark(c, data, name, scale)
        c.p["int"] = name in BITWISE or (name in INT_OK and _is_int(x) and _is_int(y))
        c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, default))
        return c

    def execute(st, c: Call) -> None:
        a, b = _values(c.p["xy"], len(c.out.shape), c.p["int"], c.mask)
        set_result(c.out, fn(a, b), c.mask)

    return Op(name, check, execute, lambda st, c: cost_two_inputs(st, c) if len(c.ins) == 2 else cost_stream(st, c))


# --- nisa ALU instructions -------------------------------------------------------------------

def _engine(engine, default: str) -> str:
    return {1: "tensor", 2: "scalar", 3: "gpsimd", 5: "vector"}.get(int(engine or 0), default)


def check_tensor_tensor(st, data1, data2, op, *, dtype=None, mask=None, engine=None, **_):
    a = tile(st, data1, "tensor_tensor", "data1")
    b = tile(st, data2, "tensor_tensor", "data2")
    same_partitions(st, a, b, "tensor_tensor")
    if free_size(a.shape) != free_size(b.shape):
        raise st.error(
            "err_shape_mismatch", f"'tensor_tensor' operands {list(a.shape)} and {list(b.shape)} differ (no broadcasting)"
        )
    if a.alloc.buffer == "psum" and b.alloc.buffer == "psum":
        raise st.error("err_unsupported_memory", "'tensor_tensor' cannot read both operands from PSUM")
    name, fn = resolve_op(st, BINARY, op, "tensor_tensor op")
    c = Call("nisa.tensor_tensor", _engine(engine, "vector"))
    c.mask = op_mask(st, mask)
    c.ins = [a, b]
    default = dtypes.bool_ if name in BOOL_RESULT else dtypes.promote(a.dtype, b.dtype)
    c.p.update(fn=fn, int=name in BITWISE or (name in INT_OK and _is_int(a) and _is_int(b)))
    for data, scale in ((a, b), (b, a)) if name == "multiply" else ((a, b),):
        fp8_rounding.mark(c, data, name, scale)
    c.out = c.result = fresh(st, a.shape, resolve_dtype(st, dtype, default))
    return c


def exec_tensor_tensor(st, c: Call) -> None:
    a, b = c.ins
    va, vb = _values([a, b], len(a.shape), c.p["int"], c.mask)
    set_result(c.out, c.p["fn"](va, vb.reshape(va.shape)), c.mask)


def _apply(fn, a, b, reverse: bool):
    return fn(b, a) if reverse else fn(a, b)


def check_tensor_scalar(st, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *,
                        dtype=None, mask=None, engine=None, **_):
    data = tile(st, data, "tensor_scalar", "data")
    n0, f0 = scalar_alu_op(st, op0, operand0, reverse0, "tensor_scalar op0")
    n1, f1 = scalar_alu_op(st, op1, operand1, reverse1, "tensor_scalar op1") if op1 is not None else (None, None)
    # bitvec operators (shifts, and/or/xor) work on integer bit patterns: integer data and operands only, and
    # op0 and op1 are both bitvec or both arithmetic (nki.isa.tensor_scalar)
    if n1 is not None and (n0 in BITWISE) != (n1 in BITWISE):
        raise st.error("err_invalid_arguments", f"'tensor_scalar' op0 {n0} and op1 {n1} must both be bitvec or both "
                       "arithmetic operators")
    for name, operand, arg in ((n0, operand0, "operand0"), (n1, operand1, "operand1")):
        if name in BITWISE and not (_is_int(data) and _is_int(operand)):
            raise st.error("err_unsupported_dtype", f"'tensor_scalar' {name} needs integer data and {arg}, got "
                           f"{dtypes.name(data.dtype)} data and {operand!r}"[:300])
    c = Call("nisa.tensor_scalar", _engine(engine, "vector"))
    c.mask = op_mask(st, mask)
    c.ins = [data] + [t for t in (operand0, operand1) if isinstance(t, Tensor)]
    c.p.update(f0=f0, f1=f1, o0=scalar_operand(st, operand0, data, "tensor_scalar", "operand0"),
               o1=scalar_operand(st, operand1, data, "tensor_scalar", "operand1") if f1 else None,
               r0=reverse0, r1=reverse1, i0=n0 in BITWISE, i1=n1 in BITWISE)
    fp8_rounding.mark(c, data, n0, operand0)
    fp8_rounding.mark(c, data, n1, operand1)
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, dtype, data.dtype))
    return c


def exec_tensor_scalar(st, c: Call) -> None:
    p, data = c.p, c.ins[0]
    nd = len(data.shape)
    r = _apply(p["f0"], *_bits_or_f32(value(data, c.mask) if p["i0"] else f32(data, c.mask), p["o0"], nd, p["i0"]),
               p["r0"])
    if p["f1"] is not None:
        r = _apply(p["f1"], *_bits_or_f32(r, p["o1"], nd, p["i1"]), p["r1"])
    set_result(c.out, r, c.mask)


def _bits_or_f32(r: np.ndarray, operand, nd: int, bits: bool) -> tuple[np.ndarray, np.ndarray]:
    """A tensor_scalar stage's inputs: integers for a bitvec operator, fp32 for the ALU's arithmetic."""
    if not bits:
        return (r if r.dtype == np.float32 else r.astype(np.float32)), scalar_value(operand, nd)
    if isinstance(operand, Tensor):
        v = operand.read().astype(np.int64)
        return r.astype(np.int64), v.reshape((v.shape[0],) + (1,) * (nd - 1))
    return r.astype(np.int64), np.int64(operand)


def check_scalar_tensor_tensor(st, *, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
                               dtype=None, mask=None, **_):
    data = tile(st, data, "scalar_tensor_tensor", "data")
    other = tile(st, operand1, "scalar_tensor_tensor", "operand1")
    same_partitions(st, data, other, "scalar_tensor_tensor")
    if data.alloc.buffer == "psum" and other.alloc.buffer == "psum":
        raise st.error("err_unsupported_memory", "'scalar_tensor_tensor' cannot read data and operand1 from PSUM")
    c = Call("nisa.scalar_tensor_tensor", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [data, other]
    n0, f0 = resolve_op(st, BINARY, op0, "op0")
    c.p.update(f0=f0, f1=resolve_op(st, BINARY, op1, "op1")[1],
               o0=scalar_operand(st, operand0, data, "scalar_tensor_tensor", "operand0"), r0=reverse0, r1=reverse1)
    fp8_rounding.mark(c, data, n0, operand0)
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, dtype, dtypes.promote(data.dtype, other.dtype)))
    return c


def exec_scalar_tensor_tensor(st, c: Call) -> None:
    data, other = c.ins
    p = c.p
    r = _apply(p["f0"], f32(data, c.mask), scalar_value(p["o0"], len(data.shape)), p["r0"])
    r = _apply(p["f1"], r, f32(other, c.mask).reshape(r.shape), p["r1"])
    set_result(c.out, r, c.mask)


def _scalar_bias(st, bias) -> bool:
    """A number as `activation` bias: nki 0.7 declares `bias: float | NkiTensor | None` (the beta docs and nki 0.3-0.6
    describe a [P, 1] vector only; the simulator takes the 0.7 signature for every standalone kernel)."""
    return st.dialect == "standalone" and isinstance(bias, (int, float, np.integer, np.floating)) \
        and not isinstance(bias, bool)


def check_activation(st, op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None,
                     mask=None, dtype=None, _name="nisa.activation", **_):
    data = tile(st, data, "activation", "data")
    name, fn = resolve_op(st, UNARY, op, "activation function")
    if _scalar_bias(st, bias):
        bias = float(bias)
    elif bias is not None:
        tile(st, bias, "activation", "bias")
        if bias.shape[0] != data.shape[0] or free_size(bias.shape) != 1:
            raise st.error("err_activation_bias_invalid_type", f"bias must be a [{data.shape[0]}, 1] vector, got {list(bias.shape)}")
    if isinstance(scale, Tensor):
        tile(st, scale, "activation", "scale")
        if scale.shape[0] != data.shape[0] or free_size(scale.shape) != 1:
            raise st.error("err_activation_scale_scalar_or_vector", f"scale must be a scalar or a [{data.shape[0]}, 1] vector")
    if reduce_res is not None:
        tile(st, reduce_res, "activation", "reduce_res")
        if reduce_res.shape[0] < data.shape[0] or free_size(reduce_res.shape) != 1:
            raise st.error("err_num_partition_mismatch", f"reduce_res must hold one value per partition of the data "
                           f"{list(data.shape)}, got {list(reduce_res.shape)}")
    c = Call(_name, "scalar")
    c.mask = op_mask(st, mask)
    c.ins = [data] + [t for t in (bias, scale) if isinstance(t, Tensor)]
    c.p.update(fn=fn, bias=bias, scale=scale, res=reduce_res,
               rfn=resolve_op(st, _ACTIVATION_REDUCE_OPS, reduce_op, "reduce op")[1] if reduce_op is not None else np.add,
               # an explicit reduce_cmd drives ScalarE's accumulator registers; without one, reduce_res gets this
               # instruction's own reduction (the beta behaviour kernels rely on)
               cmd=None if reduce_cmd is None else reduce_command(st, reduce_cmd, REDUCE_IDLE))
    if name in fp8_rounding.COPY_FUNCTIONS:
        fp8_rounding.mark(c, data, "multiply", scale)
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, dtype, data.dtype))
    if reduce_res is not None and st.trace_only:
        reduce_res.write(np.zeros(()))
    return c


def exec_activation(st, c: Call) -> None:
    p, data = c.p, c.ins[0]
    nd = len(data.shape)
    x = f32(data, c.mask)
    x = x * scalar_value(p["scale"], nd)
    if p["bias"] is not None:
        x = x + scalar_value(p["bias"], nd)
    r = np.asarray(p["fn"](x), dtype=np.float32)
    set_result(c.out, r, c.mask)
    res = p["res"]
    if res is not None or p["cmd"] is not None:
        red = np.add.reduce if p["rfn"] is np.add else p["rfn"].reduce
        neutral = {np.maximum: -np.inf, np.minimum: np.inf, np.multiply: 1}.get(p["rfn"], 0)
        rr = r if c.mask is None else np.where(full_mask(c.mask, r.shape), r, np.float32(neutral))
        vals = red(rr.reshape(r.shape[0], -1), axis=1)
        if p["cmd"] is not None:
            vals = accumulate_registers(st, "scalar", p["cmd"], vals, p["rfn"], neutral)
            if res is None:
                return
        rows = reduced_mask(c.mask, r.shape, tuple(range(1, nd)), False)
        if res.shape[0] > r.shape[0]:
            # a reduce_res of more partitions than the data (nki-library's router top-k passes its [128, 1] column for
            # a 72-row tail tile): the instruction's partitions write its leading ones, the rest keep their values
            res = res[0:r.shape[0]]
        # partitions the mask leaves out entirely are not computed: reduce_res keeps its old values there
        res.write(vals.reshape(res.shape),
                  None if rows is None else np.broadcast_to(rows.reshape((-1,) + (1,) * (len(res.shape) - 1)), res.shape))


def check_activation_reduce(st, op, data, *, reduce_op=None, reduce_res=None, bias=None, scale=1.0, mask=None,
                            dtype=None, **_):
    return check_activation(st, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                            mask=mask, dtype=dtype, _name="nisa.activation_reduce")


def check_isa_reciprocal(st, data, *, dtype=None, mask=None, **_):
    c = unary("reciprocal").check(st, data, dtype=dtype, mask=mask)
    c.op, c.engine = "nisa.reciprocal", "vector"
    return c


def check_where(st, condition, x, y, *, dtype=None, mask=None, **_):
    pred = condition.a if isinstance(condition, MaskExpr) else None  # an affine predicate works too
    cond = None if pred is not None else tile(st, condition, "where", "condition")
    xs = [_operand(st, v, "where", n) for v, n in ((x, "x"), (y, "y"))]
    tiles = ([cond] if cond is not None else []) + [t for t in xs if isinstance(t, Tensor)]
    if not tiles:
        raise st.error("err_invalid_operand", "'where' needs a tile among condition, x and y")
    c = Call("where", "vector")
    c.mask = op_mask(st, mask)
    c.ins = tiles
    c.p.update(xy=xs, pred=pred)
    shape = bshape(st, [t.shape for t in tiles], "where")
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, dtypes.promote(scalar_dtype(xs[0]), scalar_dtype(xs[1]))))
    return c


def exec_where(st, c: Call) -> None:
    shape = c.out.shape
    nd = len(shape)
    if c.p["pred"] is not None:
        cond = full_mask(c.p["pred"], shape)
    else:
        cond = lead_align(c.ins[0].read(c.mask), nd).astype(bool)
    a, b = _values(c.p["xy"], nd, False, c.mask)
    set_result(c.out, np.where(cond, a, b), c.mask)


def check_affine_select(st, pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **_):
    t = tile(st, on_true_tile, "affine_select", "on_true_tile")
    if not isinstance(pred, MaskExpr):
        raise st.error("err_unsupported_expression_in_mask", "affine_select needs an affine predicate of index expressions")
    c = Call("nisa.affine_select", "gpsimd")
    c.mask = op_mask(st, mask)
    c.ins = [t]
    c.p.update(pred=pred.a, v=on_false_value)
    c.out = c.result = fresh(st, t.shape, resolve_dtype(st, dtype, t.dtype))
    return c


def exec_affine_select(st, c: Call) -> None:
    t = c.ins[0]
    pred = full_mask(c.p["pred"], t.shape)
    set_result(c.out, np.where(pred, f32(t, c.mask), np.float32(c.p["v"])), c.mask)


def check_iadd(st, t, o):
    """`t += x`: PSUM accumulation of a matmul result (no extra instruction), else a VectorE add."""
    if not isinstance(t, Tensor):
        raise st.error("err_invalid_operand", "+= needs a tile on the left")
    accumulate = t.alloc.buffer == "psum" and isinstance(o, Tensor) and o.fresh and o.alloc.buffer == "psum"
    c = Call("psum_accumulate" if accumulate else "iadd", None if accumulate else "vector")
    c.p.update(o=o, fn=np.add)
    c.out = t
    c.ins = [t] + ([o] if isinstance(o, Tensor) else [])
    if isinstance(o, Tensor) and not same_elements(o, t) and bshape(st, [t.shape, o.shape], "+=") != tuple(t.shape):
        raise st.error("err_shape_mismatch", f"'+=' cannot combine {list(o.shape)} into the smaller {list(t.shape)}")
    c.result = t
    if st.trace_only:
        t.write(np.zeros(()))
    return c


def check_inplace(st, t, o, opname):
    c = check_iadd(st, t, o)
    c.op, c.engine = "inplace_" + opname, "vector"
    c.p["fn"] = BINARY[opname]
    return c


def exec_inplace(st, c: Call) -> None:
    t, o, fn = c.out, c.p["o"], c.p["fn"]
    is_tile = isinstance(o, Tensor)
    if c.op == "psum_accumulate" and t.alloc.wmask is not None and _starts_group(st, t, o):
        return
    if c.op == "psum_accumulate" and _accumulate_job(st, t, o):
        return
    st.pipeline.settle(reads=(o.alloc,) if is_tile else (), writes=(t.alloc,))
    valid = o.valid if is_tile else None  # elements a masked instruction did not produce stay as they are
    if is_tile and o.shape != t.shape and same_elements(o, t):  # e.g. a [M, a*b] matmul into a [M, a, b] tile
        other = f32(o).reshape(t.shape)
        valid = None if valid is None else valid.reshape(t.shape)
    else:
        other = lead_align(f32(o), len(t.shape)) if is_tile else np.float32(o)
    if (valid is None and t.adv is None and t.alloc.wmask is None and t.stamp is None and t.data.dtype == np.float32
            and (not is_tile or other.shape == t.shape)):
        fn(t.data, other, out=t.data)  # fp32 accumulation in place (the PSUM `+=` hot path)
        if st.read_origin is not None and t.alloc.origin is None:
            t.alloc.origin = st.read_origin  # undefined operand values now live in the accumulator
    else:
        t.write(np.broadcast_to(fn(f32(t), other), t.shape), valid)
    if is_tile:
        o.fresh = False


def _starts_group(st, t: Tensor, o: Tensor) -> bool:
    """`psum[...] += matmul(...)` onto PSUM elements nothing wrote yet: the first matmul of an
    accumulation group overwrites them (REFERENCE §3.5), as a dst-first nc_matmul does in nki 0.3+;
    elements already written accumulate. False when every element is defined (a plain accumulation)."""
    defined = t.defined_mask()
    if defined is None or defined.all():
        return False
    st.pipeline.settle(reads=(o.alloc,), writes=(t.alloc,))
    t.receive(o, accumulate=None)
    o.fresh = False
    return True


def _accumulate_job(st, t: Tensor, o: Tensor) -> bool:
    """PSUM accumulation of a matmul result as a pipeline job, in program order behind the matmul
    that produces `o` and the earlier accumulations into `t`. False when it must run here."""
    if (o.valid is not None or o.adv is not None or t.adv is not None or t.alloc.wmask is not None
            or t.stamp is not None or t.data.dtype != np.float32 or not same_elements(o, t)):
        return False
    if o.alloc.origin is not None:  # what reading `o` would record (it is a fresh, fully defined result)
        undefined.inherit(o.alloc)
    if st.read_origin is not None and t.alloc.origin is None:
        t.alloc.origin = st.read_origin  # undefined operand values now live in the accumulator
    batch = st.pipeline.batch
    slot = batch.slot_of(o.data) if batch is not None and batch.open_in(st.pipeline) else 0
    if slot:  # `o` is a product of the open batch: its accumulation joins the batch's job
        batch.adds.append((t.data, slot, ONTO_ZEROS if t.alloc.zeros else True))
        st.pipeline.run(None, reads=(o.alloc,), writes=(t.alloc,), hold=True, merge=True)
        o.fresh = False
        return True
    acc, part = t.data, o.data.reshape(t.shape)

    def job() -> None:
        np.add(acc, part, out=acc)

    st.pipeline.run(job, reads=(o.alloc,), writes=(t.alloc,))
    o.fresh = False
    return True


def check_tensor_copy_predicated(st, *, src, dst, predicate, reverse_pred=False, mask=None, dtype=None, **_):
    dst = tile(st, dst, "tensor_copy_predicated", "dst")
    pred = tile(st, predicate, "tensor_copy_predicated", "predicate")
    c = Call("nisa.tensor_copy_predicated", "vector")
    if isinstance(src, (int, float, np.number)) and not isinstance(src, bool):
        # the documented scalar source, copied where the predicate holds (NxDI's chunked-prefill attention masks its
        # PSUM scores with `src=-9984.0, reverse_pred=True`); only its kind must match dst's dtype
        if isinstance(src, (float, np.floating)) and not dtypes.is_float(dst.dtype):
            raise st.error("err_invalid_operand", f"'tensor_copy_predicated' copies the float {src} into the "
                           f"{dtypes.name(dst.dtype)} dst; a float source needs a float dst")
        c.p["scalar"] = src
        c.ins = [pred]
    else:
        c.ins = [tile(st, src, "tensor_copy_predicated", "src"), pred]
    c.mask = op_mask(st, mask)
    c.out = dst
    c.p["rev"] = reverse_pred
    return c


def exec_tensor_copy_predicated(st, c: Call) -> None:
    src, pred = (None, *c.ins) if "scalar" in c.p else c.ins
    dst = c.out
    nd = len(dst.shape)
    p = np.broadcast_to(lead_align(pred.read() != 0, nd), dst.shape)
    if c.p["rev"]:
        p = ~p
    if c.mask is not None:
        p = p & full_mask(c.mask, dst.shape)
    if src is None:
        sv = np.asarray(c.p["scalar"], dtype=np.float32 if dtypes.is_float(dst.dtype) else np.int64)
    else:
        sv = src.read(p if src.shape == dst.shape else None)  # only the copied elements are read
    dst.write(np.broadcast_to(lead_align(sv, nd), dst.shape), p)


def check_dropout(st, x=None, rate=None, *, prob=None, data=None, dtype=None, mask=None, _name="dropout", **_):
    x = tile(st, x if x is not None else data, _name, "data")
    rate = prob if rate is None else rate
    c = Call(_name, "vector")
    c.mask = op_mask(st, mask)
    c.ins = [x] + ([rate] if isinstance(rate, Tensor) else [])
    c.p["rate"] = rate
    c.out = c.result = fresh(st, x.shape, resolve_dtype(st, dtype, x.dtype))
    return c


def exec_dropout(st, c: Call) -> None:
    x = c.ins[0]
    v = f32(x, c.mask)
    rate = scalar_value(c.p["rate"], len(x.shape))
    keep = st.rng.random(v.shape, dtype=np.float32) >= rate
    set_result(c.out, np.where(keep, v, np.float32(0)), c.mask)


def check_softmax(st, x, axis=-1, *, dtype=None, compute_dtype=None, mask=None, **_):
    x = tile(st, x, "softmax", "x")
    c = Call("softmax", "scalar")
    c.mask = op_mask(st, mask)
    c.ins = [x]
    c.p["axis"] = axis
    c.out = c.result = fresh(st, x.shape, resolve_dtype(st, dtype, x.dtype))
    return c


def exec_softmax(st, c: Call) -> None:
    v = f32(c.ins[0], c.mask)
    ax = tuple(c.p["axis"]) if isinstance(c.p["axis"], (list, tuple)) else c.p["axis"]
    e = np.exp(v - v.max(axis=ax, keepdims=True))
    set_result(c.out, e / e.sum(axis=ax, keepdims=True), c.mask)


def check_rms_norm(st, x, w, axis=-1, n=None, epsilon=1e-6, *, dtype=None, compute_dtype=None, mask=None, **_):
    x = tile(st, x, "rms_norm", "x")
    w = tile(st, w, "rms_norm", "w")
    c = Call("rms_norm", "scalar")
    c.mask = op_mask(st, mask)
    c.ins = [x, w]
    c.p.update(axis=axis, n=n, eps=epsilon)
    c.out = c.result = fresh(st, x.shape, resolve_dtype(st, dtype, x.dtype))
    return c


def exec_rms_norm(st, c: Call) -> None:
    x, w = c.ins
    v = f32(x, c.mask)
    ax = tuple(c.p["axis"]) if isinstance(c.p["axis"], (list, tuple)) else c.p["axis"]
    n = c.p["n"] or v.shape[ax if isinstance(ax, int) else ax[-1]]
    ms = np.square(v).sum(axis=ax, keepdims=True) / np.float32(n)
    wv = f32(w)
    if wv.ndim < v.ndim:
        wv = wv.reshape((1,) * (v.ndim - wv.ndim) + wv.shape)  # a per-feature weight aligns trailing
    set_result(c.out, v / np.sqrt(ms + np.float32(c.p["eps"])) * wv, c.mask)


def check_scan(st, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None, mask=None, **_):
    d0 = tile(st, data0, "tensor_tensor_scan", "data0")
    d1 = tile(st, data1, "tensor_tensor_scan", "data1")
    same_partitions(st, d0, d1, "tensor_tensor_scan")
    if d0.shape != d1.shape:
        raise st.error("err_shape_mismatch", f"'tensor_tensor_scan' operands {list(d0.shape)} and {list(d1.shape)} differ")
    c = Call("nisa.tensor_tensor_scan", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [d0, d1] + ([initial] if isinstance(initial, Tensor) else [])
    c.p.update(init=scalar_operand(st, initial, d0, "tensor_tensor_scan", "initial"),
               f0=resolve_op(st, BINARY, op0, "op0")[1], f1=resolve_op(st, BINARY, op1, "op1")[1], r0=reverse0, r1=reverse1)
    c.out = c.result = fresh(st, d0.shape, resolve_dtype(st, dtype, dtypes.promote(d0.dtype, d1.dtype)))
    return c


def exec_scan(st, c: Call) -> None:
    d0, d1 = c.ins[0], c.ins[1]
    p = c.p
    a = f32(d0, c.mask).reshape(d0.shape[0], -1)
    b = f32(d1, c.mask).reshape(d0.shape[0], -1)
    prev = scalar_value(p["init"], 2).reshape(-1) * np.ones(a.shape[0], np.float32)
    out = np.empty_like(a)
    for i in range(a.shape[1]):
        prev = _apply(p["f1"], _apply(p["f0"], a[:, i], prev, p["r0"]), b[:, i], p["r1"]).astype(np.float32)
        out[:, i] = prev
    set_result(c.out, out.reshape(d0.shape), c.mask)


OPS = table(
    *[unary(n) for n in UNARY if n not in ("copy", "identity")],
    *[binary(n) for n in BINARY],
    Op("nisa.tensor_tensor", check_tensor_tensor, exec_tensor_tensor,
       lambda st, c: max(MIN_II, free_size(c.out.shape) * (1 if "psum" in (c.ins[0].alloc.buffer, c.ins[1].alloc.buffer) else 2))),
    Op("nisa.tensor_scalar", check_tensor_scalar, exec_tensor_scalar, cost_stream),
    Op("nisa.scalar_tensor_tensor", check_scalar_tensor_tensor, exec_scalar_tensor_tensor, cost_two_inputs),
    Op("nisa.activation", check_activation, exec_activation, cost_stream),
    Op("nisa.activation_reduce", check_activation_reduce, exec_activation, lambda st, c: cost_stream(st, c) + MIN_II),
    Op("nisa.reciprocal", check_isa_reciprocal, unary("reciprocal").execute, lambda st, c: max(MIN_II, 8 * free_size(c.out.shape))),
    Op("where", check_where, exec_where, cost_two_inputs),
    Op("nisa.affine_select", check_affine_select, exec_affine_select, cost_gpsimd),
    Op("iadd", check_iadd, exec_inplace, cost_two_inputs, concurrent=True),
    Op("inplace", check_inplace, exec_inplace, cost_two_inputs),
    Op("nisa.tensor_copy_predicated", check_tensor_copy_predicated, exec_tensor_copy_predicated, cost_stream),
    Op("dropout", check_dropout, exec_dropout, cost_stream),
    Op("nisa.dropout", lambda st, *a, **k: check_dropout(st, *a, _name="nisa.dropout", **k), exec_dropout, cost_stream),
    Op("softmax", check_softmax, exec_softmax, lambda st, c: 3 * cost_stream(st, c)),
    Op("rms_norm", check_rms_norm, exec_rms_norm, lambda st, c: 3 * cost_stream(st, c)),
    Op("nisa.tensor_tensor_scan", check_scan, exec_scan, cost_two_inputs),
)
