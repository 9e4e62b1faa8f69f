"""Submissions stored content-addressed: files go to `blobs` by SHA-256 (stored once however often
they are uploaded); a submission's id is its content hash, so an identical re-upload is one row."""

from __future__ import annotations

import hashlib
import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from evidence.submission import Manifest, Submission
from grader.store.models import Blob, SubmissionFile, SubmissionRow


def put_submission(session: Session, submission: Submission) -> str:
    sid = submission.content_hash
    if session.get(SubmissionRow, sid) is not None:
        return sid
    session.add(SubmissionRow(id=sid, task_id=submission.manifest.task.id,
                              manifest=submission.manifest.model_dump(mode="json"), created_at=time.time()))
    for path, text in submission.files.items():
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        if session.get(Blob, digest) is None:
            session.add(Blob(sha256=digest, size=len(data), content=data))
        session.add(SubmissionFile(submission_id=sid, path=path, blob_sha256=digest))
    session.flush()
    return sid


def get_submission(session: Session, submission_id: str) -> Submission | None:
    row = session.get(SubmissionRow, submission_id)
    if row is None:
        return None
    files = session.execute(select(SubmissionFile.path, Blob.content).join(Blob, Blob.sha256 == SubmissionFile.blob_sha256)
                            .where(SubmissionFile.submission_id == submission_id))
    return Submission(manifest=Manifest.model_validate(row.manifest),
                      files={path: bytes(content).decode("utf-8") for path, content in files})
