"""Calibration runs with per-item results, audit runs, reviewer scores.

Revision ID: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

RUN_TABLES = ("calibration_runs", "audit_runs")


def _run_table(name: str) -> None:
    op.create_table(
        name,
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=True),
        sa.Column("set_name", sa.String(length=255), nullable=False),
        sa.Column("rubric", sa.String(length=100), nullable=False),
        sa.Column("epoch", sa.String(length=64), nullable=False),
        sa.Column("drafter", sa.String(length=255), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.String(length=40), nullable=False),
        sa.Column("report_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f(f"ix_{name}_epoch"), name, ["epoch"], unique=False)
    op.create_index(op.f(f"ix_{name}_job_id"), name, ["job_id"], unique=False)


def upgrade() -> None:
    for name in RUN_TABLES:
        _run_table(name)
    op.create_table(
        "reviewer_scores",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("reviewer", sa.String(length=100), nullable=False),
        sa.Column("set_name", sa.String(length=255), nullable=False),
        sa.Column("item_id", sa.String(length=255), nullable=False),
        sa.Column("criterion_id", sa.String(length=64), nullable=False),
        sa.Column("score", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("reviewer", "set_name", "item_id", "criterion_id", name="uq_reviewer_score"),
    )
    op.create_index(op.f("ix_reviewer_scores_reviewer"), "reviewer_scores", ["reviewer"], unique=False)
    op.create_table(
        "calibration_item_results",
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("item_id", sa.String(length=255), nullable=False),
        sa.Column("criterion_id", sa.String(length=64), nullable=False),
        sa.Column("gold", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["calibration_runs.id"]),
        sa.PrimaryKeyConstraint("run_id", "item_id", "criterion_id"),
    )


def downgrade() -> None:
    op.drop_table("calibration_item_results")
    op.drop_index(op.f("ix_reviewer_scores_reviewer"), table_name="reviewer_scores")
    op.drop_table("reviewer_scores")
    for name in reversed(RUN_TABLES):
        op.drop_index(op.f(f"ix_{name}_job_id"), table_name=name)
        op.drop_index(op.f(f"ix_{name}_epoch"), table_name=name)
        op.drop_table(name)
