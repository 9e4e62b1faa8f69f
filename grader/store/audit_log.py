"""The append-only audit log: each entry's hash is SHA-256 over the canonical JSON of the entry and
the previous entry's hash, so editing, removing or inserting a row breaks the chain at that row.

Appends happen inside the transaction of the change they record (both commit or neither). They are
serialised: on SQLite by the write lock every write transaction takes, on PostgreSQL by a
transaction-scoped advisory lock.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from grader.store.models import AuditEntry

GENESIS = "0" * 64
_CHAIN_LOCK = 72120002


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(at: str, actor: str, action: str, subject: str, data: str, prev_hash: str) -> str:
    body = canonical_json({"at": at, "actor": actor, "action": action, "subject": subject, "data": data})
    return hashlib.sha256((body + prev_hash).encode("utf-8")).hexdigest()


def _row_hash(e: AuditEntry) -> str:
    return entry_hash(e.at, e.actor, e.action, e.subject, e.data, e.prev_hash)


def append(session: Session, *, actor: str, action: str, subject: str, data: dict[str, Any] | None = None) -> AuditEntry:
    """Add an entry in the caller's transaction."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CHAIN_LOCK})
    last = session.scalars(select(AuditEntry.hash).order_by(AuditEntry.seq.desc()).limit(1)).first()
    prev = last or GENESIS
    at = datetime.now(UTC).isoformat(timespec="microseconds")
    payload = canonical_json(data or {})
    entry = AuditEntry(at=at, actor=actor, action=action, subject=subject, data=payload, prev_hash=prev,
                       hash=entry_hash(at, actor, action, subject, payload, prev))
    session.add(entry)
    session.flush()
    return entry


def page(session: Session, *, after: int = 0, limit: int = 100, subject: str | None = None) -> list[AuditEntry]:
    query = select(AuditEntry).where(AuditEntry.seq > after)
    if subject:
        query = query.where(AuditEntry.subject == subject)
    return list(session.scalars(query.order_by(AuditEntry.seq).limit(limit)))


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    entries: int
    head: str  # hash of the last entry: record it elsewhere to detect truncation of the tail
    problem: str | None = None
    seq: int | None = None  # the first entry found modified, inserted or removed (the one after a gap)


def verify(session: Session, batch: int = 5000) -> ChainReport:
    """Walk the chain in order and name the first entry that was modified, inserted or removed."""
    before_prev: str | None = None  # hash of the entry before the previous one
    prev_hash, prev_seq, count, after = GENESIS, 0, 0, 0
    while True:
        rows = list(session.scalars(select(AuditEntry).where(AuditEntry.seq > after).order_by(AuditEntry.seq).limit(batch)))
        if not rows:
            return ChainReport(ok=True, entries=count, head=prev_hash)
        for e in rows:
            if _row_hash(e) != e.hash:
                return ChainReport(False, count, prev_hash, f"entry {e.seq} was modified: its content no longer "
                                   f"matches its hash", e.seq)
            if e.prev_hash != prev_hash:
                if before_prev is not None and e.prev_hash == before_prev:
                    return ChainReport(False, count, prev_hash, f"entry {prev_seq} was inserted: entry {e.seq} "
                                       f"chains to the entry before it", prev_seq)
                where = f"after entry {prev_seq}" if prev_seq else "at the start of the log"
                return ChainReport(False, count, prev_hash, f"an entry was removed {where}: entry {e.seq} does not "
                                   f"chain to its predecessor", e.seq)
            before_prev, prev_hash, prev_seq = prev_hash, e.hash, e.seq
            count += 1
        after = rows[-1].seq
