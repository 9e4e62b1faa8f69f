"""Submissions stored content-addressed: files go to `blobs` by SHA-256 (stored once however often
they are uploaded); a submission's id is its content hash, so an identical re-upload is one row."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from evidence.submission import Manifest, Submission
from grader.store.models import Blob, SubmissionFile, SubmissionRow


def _insert_new(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: concurrent uploads of the same content both succeed."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    session.execute(insert(table).on_conflict_do_nothing(), rows)


def put_submission(session: Session, submission: Submission) -> str:
    sid = submission.content_hash
    if session.get(SubmissionRow, sid) is not None:
        return sid
    blobs, files = [], []
    for path, text in submission.files.items():
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        blobs.append({"sha256": digest, "size": len(data), "content": data})
        files.append({"submission_id": sid, "path": path, "blob_sha256": digest})
    _insert_new(session, SubmissionRow, [{"id": sid, "task_id": submission.manifest.task.id,
                                          "manifest": submission.manifest.model_dump(mode="json"),
                                          "created_at": time.time()}])
    _insert_new(session, Blob, blobs)
    _insert_new(session, SubmissionFile, files)
    return sid


def get_submission(session: Session, submission_id: str) -> Submission | None:
    row = session.get(SubmissionRow, submission_id)
    if row is None:
        return None
    files = session.execute(select(SubmissionFile.path, Blob.content).join(Blob, Blob.sha256 == SubmissionFile.blob_sha256)
                            .where(SubmissionFile.submission_id == submission_id))
    return Submission(manifest=Manifest.model_validate(row.manifest),
                      files={path: bytes(content).decode("utf-8") for path, content in files})
