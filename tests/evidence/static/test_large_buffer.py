"""large-buffer-outside-loop's oversized pattern says what it is about (a single allocation's size), since
the third public sweep found it on a buffer allocated inside its loop under a kind that names loops."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from

SRC = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def fill(out, n):
    per_part = nl.tile_size.total_available_sbuf_size // 4
    for t in range(n // per_part):
        buf = nl.ndarray((128, per_part), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=buf, value=7)
        nisa.dma_copy(dst=out[0:1, t * per_part:(t + 1) * per_part], src=buf[0:1, :])
    return out
"""


def test_an_oversized_buffer_in_a_loop_is_reported_for_its_size_not_its_place():
    a = analyze(SRC, inputs=bindings_from({"out": ((1, 1 << 20), "int32")}), entry="fill")
    (f,) = [f for f in a.findings if f.rule == "large-buffer-outside-loop"]
    assert f.start == 10 and "over half of a partition's usable SBUF" in f.message
    assert "a single allocation, not one outside a loop" in f.message
