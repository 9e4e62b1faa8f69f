"""Service CLI: keys create/revoke, db upgrade, and the refusals that keep a server safe."""

from __future__ import annotations

from typer.testing import CliRunner

from grader.cli import app as cli_app
from grader.store.db import Store
from grader.store.keys import authenticate


def test_keys_create_prints_the_token_once_and_revoke_disables_it(tmp_path):
    env = {"GRADER_DATA_DIR": str(tmp_path)}
    created = CliRunner().invoke(cli_app, ["keys", "create", "--role", "reviewer", "--name", "ada"], env=env)
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    store = Store(f"sqlite:///{tmp_path}/grader.db")  # the default location under the data dir
    assert authenticate(store, token).name == "ada"
    assert CliRunner().invoke(cli_app, ["keys", "revoke", "ada"], env=env).exit_code == 0
    assert authenticate(store, token) is None
    listed = CliRunner().invoke(cli_app, ["keys", "list"], env=env).stdout
    assert "ada" in listed and "revoked" in listed and token not in listed


def test_auth_off_is_refused_on_a_non_loopback_bind(tmp_path):
    result = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0", "--workers", "0"],
                                env={"GRADER_DATA_DIR": str(tmp_path), "GRADER_AUTH": "off"})
    assert result.exit_code == 2
    assert "GRADER_AUTH=off is for local single-user use" in result.output


def test_bad_database_urls_are_one_line_errors(tmp_path):
    for url, expected in [("mysql://x/y", "unsupported database 'mysql'"), ("nonsense", "not a database URL")]:
        result = CliRunner().invoke(cli_app, ["db", "upgrade"], env={"GRADER_DATABASE_URL": url})
        assert result.exit_code == 2 and expected in result.output, result.output
