"""Row tiling shared by the kernels of this submission (a helper module the kernel imports)."""

from dataclasses import dataclass

import nki.language as nl

PMAX = nl.tile_size.pmax  # read at import time, as library helpers do


@dataclass(frozen=True)
class RowTiling:
    rows: int
    partitions: int = PMAX

    def tiles(self):
        """(first row, valid rows) of every partition tile; the last one may be ragged."""
        for lo in range(0, self.rows, self.partitions):
            yield lo, min(self.rows, lo + self.partitions) - lo
