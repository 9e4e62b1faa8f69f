"""`nki.isa.constants` (standalone nki): the ISA's enums under the submodule name library kernels
import them by (`from nki.isa import constants as nisa_constants; nisa_constants.dge_mode.hwdge`).
The very same enum classes as `nki.isa`, so either spelling passes the enum checks."""

from evidence.nki.shim.standalone.isa import (  # noqa: F401  (re-exported API)
    dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, oob_mode, reduce_cmd,
)
