"""Initial schema: submissions and blobs, jobs, drafts, reviews, sign-offs, API keys, the audit log.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_keys',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('revoked_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    op.create_table('audit_log',
    sa.Column('seq', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('at', sa.String(length=40), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=64), nullable=False),
    sa.Column('subject', sa.String(length=255), nullable=False),
    sa.Column('data', sa.Text(), nullable=False),
    sa.Column('prev_hash', sa.String(length=64), nullable=False),
    sa.Column('hash', sa.String(length=64), nullable=False),
    sa.PrimaryKeyConstraint('seq'),
    sa.UniqueConstraint('hash')
    )
    op.create_table('blobs',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('content', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('sha256')
    )
    op.create_table('submissions',
    sa.Column('id', sa.String(length=80), nullable=False),
    sa.Column('task_id', sa.String(length=255), nullable=False),
    sa.Column('manifest', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('jobs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('submission_id', sa.String(length=80), nullable=True),
    sa.Column('task_id', sa.String(length=255), nullable=True),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('submitted_by', sa.String(length=255), nullable=False),
    sa.Column('idempotency_key', sa.String(length=255), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('max_attempts', sa.Integer(), nullable=False),
    sa.Column('worker', sa.String(length=255), nullable=True),
    sa.Column('lease_until', sa.Float(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('finished_at', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('submitted_by', 'idempotency_key', name='uq_jobs_idempotency')
    )
    op.create_index('ix_jobs_state_created', 'jobs', ['state', 'created_at'], unique=False)
    op.create_index(op.f('ix_jobs_submission_id'), 'jobs', ['submission_id'], unique=False)
    op.create_table('submission_files',
    sa.Column('submission_id', sa.String(length=80), nullable=False),
    sa.Column('path', sa.String(length=255), nullable=False),
    sa.Column('blob_sha256', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['blob_sha256'], ['blobs.sha256'], ),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], ),
    sa.PrimaryKeyConstraint('submission_id', 'path')
    )
    op.create_table('drafts',
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('draft_json', sa.Text(), nullable=False),
    sa.Column('epoch', sa.String(length=64), nullable=False),
    sa.Column('model_calls', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('latency_s', sa.Float(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ),
    sa.PrimaryKeyConstraint('job_id')
    )
    op.create_table('reviews',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('criterion_id', sa.String(length=64), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('previous', sa.JSON(), nullable=False),
    sa.Column('new', sa.JSON(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('author', sa.String(length=255), nullable=False),
    sa.Column('epoch', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_reviews_job_id'), 'reviews', ['job_id'], unique=False)
    op.create_table('sign_offs',
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('author', sa.String(length=255), nullable=False),
    sa.Column('final', sa.JSON(), nullable=False),
    sa.Column('comment', sa.Text(), nullable=True),
    sa.Column('epoch', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ),
    sa.PrimaryKeyConstraint('job_id')
    )


def downgrade() -> None:
    op.drop_table('sign_offs')
    op.drop_index(op.f('ix_reviews_job_id'), table_name='reviews')
    op.drop_table('reviews')
    op.drop_table('drafts')
    op.drop_table('submission_files')
    op.drop_index(op.f('ix_jobs_submission_id'), table_name='jobs')
    op.drop_index('ix_jobs_state_created', table_name='jobs')
    op.drop_table('jobs')
    op.drop_table('submissions')
    op.drop_table('blobs')
    op.drop_table('audit_log')
    op.drop_table('api_keys')
