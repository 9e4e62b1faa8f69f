"""Draft summaries for the review queue's filters: the flag codes a draft carries and how many of its
criteria lack a passing calibration, stored beside the draft so the queue filters in SQL.

Revision ID: 0003
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def summarise(draft: dict) -> tuple[str, int]:
    """(' code1 code2 ', uncalibrated) from a draft's JSON; kept in step with grader.service.summary."""
    criteria = draft.get("criteria", [])
    codes = sorted({f["code"] for c in criteria for f in c.get("flags", [])})
    uncalibrated = sum(1 for c in criteria if c.get("status") != "not_applicable"
                       and not (c.get("consistency") or {}).get("calibrated", False))
    return (" " + " ".join(codes) + " ") if codes else "", uncalibrated


def upgrade() -> None:
    with op.batch_alter_table("drafts") as batch:
        batch.add_column(sa.Column("flag_codes", sa.Text(), nullable=False, server_default=""))
        batch.add_column(sa.Column("uncalibrated", sa.Integer(), nullable=False, server_default="0"))
    drafts = sa.table("drafts", sa.column("job_id", sa.String), sa.column("draft_json", sa.Text),
                      sa.column("flag_codes", sa.Text), sa.column("uncalibrated", sa.Integer))
    conn = op.get_bind()
    for job_id, text in conn.execute(sa.select(drafts.c.job_id, drafts.c.draft_json)).all():
        codes, uncalibrated = summarise(json.loads(text))
        conn.execute(drafts.update().where(drafts.c.job_id == job_id).values(flag_codes=codes, uncalibrated=uncalibrated))


def downgrade() -> None:
    with op.batch_alter_table("drafts") as batch:
        batch.drop_column("uncalibrated")
        batch.drop_column("flag_codes")
