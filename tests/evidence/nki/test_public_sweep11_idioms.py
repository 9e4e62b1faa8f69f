"""What the eleventh public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

from evidence.model import EvidenceBundle
from evidence.nki.collector import SimulationCollector
from evidence.static.collectors import NkiStaticCollector
from evidence.submission import Manifest, Submission
from grader.drafting.rules import RulesDrafter
from grader.rubric import load_rubric

# An entry that hands all its work to a kernel the submission does not contain (a framework wrapper around a
# compiler-shipped kernel): the code under review has no tile, dtype or instruction to judge.
WRAPPER = '''
import neuronxcc.nki.language as nl


def attention_entry(q, k, v, o):
    from vendor_kernels.attention import fused_attention
    fused_attention(q, k, v, o, causal=True)
'''

# The same shape of entry whose work is in a helper module the submission lists: that code is judged.
THIN_ENTRY = '''
import nki
import nki.language as nl

from .scale import scale_rows


@nki.jit
def entry(x):
    return scale_rows(x)
'''
SCALE = '''
import nki.isa as nisa
import nki.language as nl


def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out
'''
STATIC_CRITERIA = ("tiling", "precision", "neuron_platform")


def _submission(files: dict[str, str], kernel: str, entry: str, inputs: list[dict]) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "wrapper", "title": "entry wrappers"},
        "kernel": {"file": kernel, "entry": entry, "modules": sorted(set(files) - {kernel})},
        "inputs": inputs,
    })
    return Submission(manifest=manifest, files=files)


def test_entry_reaching_no_nki_call_is_a_wrapper_and_leaves_static_criteria_unscored():
    inputs = [{"name": n, "shape": [1, 128, 512], "dtype": "float32"} for n in ("q", "k", "v", "o")]
    sub = _submission({"attn.py": WRAPPER}, "attn.py", "attention_entry", inputs)
    items = NkiStaticCollector().collect(sub)
    kinds = {i.kind for i in items}
    assert "nki.wrapper" in kinds and "nki.kernel" not in kinds
    drafts = {c.criterion_id: c for c in RulesDrafter().draft(
        sub, EvidenceBundle(submission_hash="sha256:w", items=tuple(items)), load_rubric()).criteria}
    for cid in STATIC_CRITERIA:  # were 5/5 "on the absence of defects" in code that has none to show
        assert drafts[cid].status == "unscored", cid
        assert "makes no NKI call" in drafts[cid].rationale


def test_thin_entry_whose_helper_module_does_the_work_is_still_a_kernel():
    files = {"kern/entry.py": THIN_ENTRY, "kern/scale.py": SCALE}
    sub = _submission(files, "kern/entry.py", "entry", [{"name": "x", "shape": [128, 256], "dtype": "float32"}])
    items = NkiStaticCollector().collect(sub)
    kinds = {i.kind for i in items}
    assert "nki.kernel" in kinds and "nki.wrapper" not in kinds
    drafts = {c.criterion_id: c for c in RulesDrafter().draft(
        sub, EvidenceBundle(submission_hash="sha256:t", items=tuple(items)), load_rubric()).criteria}
    assert all(drafts[cid].status == "scored" for cid in STATIC_CRITERIA)


# A per-chunk column of a [B, S] gate/decay vector, loaded one value per partition (a chunked scan's per-token
# scalars): the integer batch index drops an axis, so the HBM side reads as one 256-byte row while each of the 64
# partitions receives 4 bytes.
COLUMN_LOADS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def per_token_columns(gate):
    B, S = gate.shape
    out = nl.ndarray((B, S, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for b in range(B):
        for c in range(S // 64):
            col = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=col, src=gate[b, nl.ds(c * 64, 64)])
            nisa.activation(dst=col, data=col, op=nl.exp)
            nisa.dma_copy(dst=out[b, nl.ds(c * 64, 64), :], src=col)
    return out
'''


def test_one_row_hbm_run_spread_over_partitions_is_sized_per_partition():
    sub = _submission({"k.py": COLUMN_LOADS}, "k.py", "per_token_columns",
                      [{"name": "gate", "shape": [2, 256], "dtype": "float32"}])
    small = {i.location.start_line: i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.small-dma"}
    load = small[next(n for n, text in enumerate(COLUMN_LOADS.splitlines(), 1) if "src=gate[" in text)]
    assert load.metrics["bytes_per_partition"] == 4 and load.metrics["partitions"] == 64  # read "256 B" on 1
    assert "moves 4 B per partition" in load.title


# Decay factors of a gated recurrence: clamp the pairwise log-decays at 0 (a tensor_scalar minimum), then exp. The
# clamp is no scale or bias activation could take over; a scale and shift before the exp is.
DECAY_KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def decays(log_decay):
    out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=log_decay)
    step = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(step, t, {ops})
    d = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=d, data=step, op=nl.exp)
    nisa.dma_copy(dst=out, src=d)
    return out
'''
CLAMP = "op0=nl.minimum, operand0=0.0"
SCALE_SHIFT = "op0=nl.multiply, operand0=0.5, op1=nl.add, operand1=-1.0"


def test_clamp_before_activation_is_not_an_unfused_scale_or_bias():
    def unfused(ops: str) -> list:
        sub = _submission({"k.py": DECAY_KERNEL.format(ops=ops)}, "k.py", "decays",
                          [{"name": "log_decay", "shape": [64, 64], "dtype": "float32"}])
        return [i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.unfused-activation"]

    assert unfused(CLAMP) == []  # was "follows a separate tensor_scalar ...; fuse it as activation scale/bias"
    assert len(unfused(SCALE_SHIFT)) == 1


# A kernel whose every instruction runs, stopped only because it returns an nl.hbm tensor (nki 0.3+ wants
# shared_hbm), and one stopped in the middle of its body (an SBUF tile of 129 partitions).
HBM_RETURN = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.activation(dst=t, data=t, op=nl.exp)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''
MIDWAY = HBM_RETURN.replace("buffer=nl.hbm", "buffer=nl.shared_hbm").replace(
    "    nisa.activation(dst=t", "    bad = nl.ndarray((129, 512), dtype=nl.float32, buffer=nl.sbuf)\n    nisa.activation(dst=t")


def _simulated(kernel: str) -> dict:
    manifest = Manifest.model_validate({
        "task": {"id": "stop", "title": "stopped runs"}, "kernel": {"file": "k.py", "entry": "kernel"},
        "inputs": [{"name": "a", "shape": [128, 512], "dtype": "float32"}],
        "reference": {"file": "ref.py", "entry": "ref"},
    })
    sub = Submission(manifest=manifest, files={"k.py": kernel, "ref.py": "import numpy as np\n\ndef ref(a):\n"
                                                                         "    return np.exp(a)\n"})
    return {i.kind: i for i in SimulationCollector().collect(sub)}


def test_run_stopped_only_at_its_returned_output_keeps_its_trace_facts():
    done = _simulated(HBM_RETURN)
    assert done["sim.error"].labels["code"] == "err_unsupported_memory"
    # every instruction ran: memory and data movement are judged on the trace, not on the absence of defects
    assert done["sim.trace"].metrics["dma_count"] == 2 and done["sim.reuse"].metrics["redundant_ratio"] == 0
    assert "sim.output" not in done
    midway = _simulated(MIDWAY)
    assert midway["sim.error"].labels["code"] != "err_unsupported_memory"
    assert "sim.trace" not in midway and "sim.reuse" not in midway
