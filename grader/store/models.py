"""The service's tables (SQLAlchemy 2 typed ORM). Times are UTC POSIX seconds (floats): portable across
SQLite and PostgreSQL and cheap to compare for leases. Schema changes go through Alembic migrations."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, str: String(255)}


class Blob(Base):
    """A file's bytes, addressed by their SHA-256: identical files are stored once."""

    __tablename__ = "blobs"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    content: Mapped[bytes] = mapped_column(LargeBinary)


class SubmissionRow(Base):
    """A validated submission; its id is the hash of its manifest and files, so re-uploads deduplicate."""

    __tablename__ = "submissions"
    id: Mapped[str] = mapped_column(String(80), primary_key=True)
    task_id: Mapped[str]
    manifest: Mapped[dict[str, Any]]
    created_at: Mapped[float] = mapped_column(Float)


class SubmissionFile(Base):
    __tablename__ = "submission_files"
    submission_id: Mapped[str] = mapped_column(String(80), ForeignKey("submissions.id"), primary_key=True)
    path: Mapped[str] = mapped_column(String(255), primary_key=True)
    blob_sha256: Mapped[str] = mapped_column(ForeignKey("blobs.sha256"))


class Job(Base):
    """A durable unit of work (an evaluation, later calibration runs and audits) claimed by workers
    under a lease. `attempts` counts claims; a lapsed lease re-queues the job until attempts run out."""

    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("submitted_by", "idempotency_key", name="uq_jobs_idempotency"),
        Index("ix_jobs_state_created", "state", "created_at"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16))  # queued | running | done | failed
    submission_id: Mapped[str | None] = mapped_column(String(80), ForeignKey("submissions.id"), index=True)
    task_id: Mapped[str | None]
    params: Mapped[dict[str, Any]]
    submitted_by: Mapped[str]  # API key id (or "local" with auth off)
    idempotency_key: Mapped[str | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer)
    worker: Mapped[str | None]
    lease_until: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)


class DraftRow(Base):
    """The one draft of a finished evaluation job (job_id is the key: a job yields a draft exactly once)."""

    __tablename__ = "drafts"
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    draft_json: Mapped[str] = mapped_column(Text)
    epoch: Mapped[str] = mapped_column(String(64))
    model_calls: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    latency_s: Mapped[float] = mapped_column(Float)  # submission to finished draft
    created_at: Mapped[float] = mapped_column(Float)
    # For the review queue's filters (grader.service.summary): " code1 code2 " of every flag on any
    # criterion ("" when none), and how many judged criteria lack a passing calibration.
    flag_codes: Mapped[str] = mapped_column(Text, default="", server_default="")
    uncalibrated: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class ReviewRow(Base):
    """One reviewer decision on one criterion: accept (optionally acknowledging flags) or edit the score."""

    __tablename__ = "reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    criterion_id: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(16))  # accept | edit
    previous: Mapped[dict[str, Any]]  # {"status", "score"} before this decision
    new: Mapped[dict[str, Any]]
    reason: Mapped[str | None] = mapped_column(Text)
    author: Mapped[str]
    epoch: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float)


class SignOff(Base):
    __tablename__ = "sign_offs"
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    author: Mapped[str]
    final: Mapped[dict[str, Any]]  # criterion id -> {"status", "score"}
    comment: Mapped[str | None] = mapped_column(Text)
    epoch: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float)


class ApiKey(Base):
    """An API key: only the SHA-256 of the token is stored; the token is shown once at creation."""

    __tablename__ = "api_keys"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str]
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_by: Mapped[str]
    created_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float)


class AuditEntry(Base):
    """An append-only, hash-chained log entry. `seq` orders the chain and is not hashed, so a row
    inserted by renumbering shows up as a broken link rather than as edits of every later row."""

    __tablename__ = "audit_log"
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[str] = mapped_column(String(40))
    actor: Mapped[str]
    action: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str]
    data: Mapped[str] = mapped_column(Text)  # canonical JSON, hashed as stored
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64), unique=True)


class _RunColumns:
    """What calibration runs and audits share: identity, the summary fields lists filter on, the report."""

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    job_id: Mapped[str | None] = mapped_column(String(32), index=True)  # the job that produced it, if any
    set_name: Mapped[str]
    rubric: Mapped[str] = mapped_column(String(100))
    epoch: Mapped[str] = mapped_column(String(64), index=True)
    drafter: Mapped[str]
    passed: Mapped[bool]
    created_at: Mapped[str] = mapped_column(String(40))
    report_json: Mapped[str] = mapped_column(Text)


class CalibrationRun(_RunColumns, Base):
    __tablename__ = "calibration_runs"


class CalibrationItemResult(Base):
    """One item x criterion of a calibration run: gold beside the drafted value (queryable without the report)."""

    __tablename__ = "calibration_item_results"
    run_id: Mapped[str] = mapped_column(String(100), ForeignKey("calibration_runs.id"), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    criterion_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    gold: Mapped[str | None] = mapped_column(String(32))  # a score, "not_applicable", or None
    status: Mapped[str] = mapped_column(String(16))
    score: Mapped[int | None] = mapped_column(Integer)


class AuditRun(_RunColumns, Base):
    __tablename__ = "audit_runs"


class ReviewerScoreRow(Base):
    """A reviewer's score for one calibration item and criterion (the newest submission counts)."""

    __tablename__ = "reviewer_scores"
    __table_args__ = (UniqueConstraint("reviewer", "set_name", "item_id", "criterion_id", name="uq_reviewer_score"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    reviewer: Mapped[str] = mapped_column(String(100), index=True)  # the key id of the reviewer
    set_name: Mapped[str]
    item_id: Mapped[str]
    criterion_id: Mapped[str] = mapped_column(String(64))
    score: Mapped[str] = mapped_column(String(32))  # "1".."5", "not_applicable" or "unscored"
    created_at: Mapped[float] = mapped_column(Float)
