"""The store on both databases: migrations, content-addressed submissions, API keys, and the
hash-chained audit log, whose verifier names the first edited, deleted or inserted row."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text, update
from typer.testing import CliRunner

from grader.cli import app as cli_app
from grader.store import audit_log, keys, migrate
from grader.store.models import AuditEntry, Blob, SubmissionRow
from grader.store.submissions import get_submission, put_submission
from grader.submission import submission_from_upload
from tests.service.conftest import upload


def test_migrations_reach_head_and_are_idempotent(store):
    assert migrate.is_current(store)
    assert migrate.upgrade(store) == migrate.head_revision()  # a second upgrade is a no-op
    assert migrate.current_revision(store) == migrate.head_revision()


def test_models_match_the_migrations(store):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from grader.store.models import Base

    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_submissions_are_content_addressed_and_deduplicated(store):
    a = submission_from_upload(**upload("matmul-tiled"))
    b_body = upload("matmul-tiled")
    b_body["files"]["NOTES.md"] = "another note\n"
    b_body["manifest"] += '\n[notes]\nfile = "NOTES.md"\n'
    b = submission_from_upload(**b_body)
    with store.write() as s:
        ids = [put_submission(s, a), put_submission(s, a), put_submission(s, b)]
    assert ids[0] == ids[1] != ids[2]
    with store.read() as s:
        assert s.scalar(select(func.count()).select_from(SubmissionRow)) == 2
        # kernel.py, reference.py are shared between the two submissions; only NOTES.md is new
        assert s.scalar(select(func.count()).select_from(Blob)) == len(a.files) + 1
        assert get_submission(s, ids[0]) == a and get_submission(s, ids[2]) == b


def test_keys_are_stored_hashed_shown_once_and_revocable(store):
    key, token = keys.create_key(store, name="ada", role="reviewer")
    assert token.startswith("nkig_") and len(token) > 40
    with store.read() as s:
        stored = s.execute(text("SELECT token_hash FROM api_keys")).scalars().all()
    assert token not in stored and keys.token_hash(token) in stored
    assert keys.authenticate(store, token).role == "reviewer"
    assert keys.authenticate(store, token + "x") is None
    keys.revoke_key(store, "ada")
    assert keys.authenticate(store, token) is None
    with pytest.raises(keys.ApiKeyError, match="unknown role 'boss'"):
        keys.create_key(store, name="x", role="boss")
    with pytest.raises(keys.UnknownKey):
        keys.revoke_key(store, "nobody")


def _fill_log(store, n: int = 6) -> None:
    for i in range(n):
        with store.write() as s:
            audit_log.append(s, actor="test", action="thing.happened", subject=f"thing:{i}", data={"i": i})


def _verify(db_url: str):
    return CliRunner().invoke(cli_app, ["log", "verify"], env={"GRADER_DATABASE_URL": db_url})


def test_intact_log_verifies(store, db_url):
    _fill_log(store)
    result = _verify(db_url)
    assert result.exit_code == 0, result.output
    assert "6 entries" in result.stdout


def test_verify_names_an_edited_row(store, db_url):
    _fill_log(store)
    with store.write() as s:
        s.execute(update(AuditEntry).where(AuditEntry.seq == 3).values(data='{"i":99}'))
    result = _verify(db_url)
    assert result.exit_code == 1
    assert "entry 3 was modified" in result.output


def test_verify_names_a_deleted_row(store, db_url):
    _fill_log(store)
    with store.write() as s:
        s.execute(text("DELETE FROM audit_log WHERE seq = 4"))
    result = _verify(db_url)
    assert result.exit_code == 1
    assert "removed after entry 3: entry 5" in " ".join(result.output.split())


def test_verify_names_an_inserted_row(store, db_url):
    _fill_log(store)
    with store.write() as s:
        # Make room after entry 2 and forge a self-consistent entry that chains to entry 2.
        s.execute(text("UPDATE audit_log SET seq = seq + 100 WHERE seq >= 3"))
        prev = s.scalar(select(AuditEntry.hash).where(AuditEntry.seq == 2))
        at, data = "2026-01-01T00:00:00+00:00", '{"i":"forged"}'
        s.add(AuditEntry(seq=3, at=at, actor="mallory", action="thing.happened", subject="thing:x", data=data,
                         prev_hash=prev, hash=audit_log.entry_hash(at, "mallory", "thing.happened", "thing:x", data, prev)))
    result = _verify(db_url)
    assert result.exit_code == 1
    assert "entry 3 was inserted" in result.output


def test_log_verify_on_a_database_never_migrated_says_so(tmp_path):
    result = CliRunner().invoke(cli_app, ["log", "verify"], env={"GRADER_DATABASE_URL": f"sqlite:///{tmp_path}/new.db"})
    assert result.exit_code == 2
    assert "run `grader db upgrade`" in result.output


def test_concurrent_uploads_of_the_same_submission_all_succeed(store):
    """Two transactions storing identical content at once (the load benchmark found this on PostgreSQL)."""
    import threading

    sub = submission_from_upload(**upload("rmsnorm-cuda-port"))
    barrier, errors = threading.Barrier(4), []

    def put() -> None:
        try:
            with store.write() as s:
                barrier.wait(timeout=10)
                put_submission(s, sub)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=put) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with store.read() as s:
        assert s.scalar(select(func.count()).select_from(SubmissionRow)) == 1
    assert not errors
