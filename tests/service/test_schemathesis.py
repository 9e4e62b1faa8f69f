"""Property-based API testing with schemathesis against the live OpenAPI schema, on both databases:
a bounded number of generated requests per operation, schema-valid and schema-invalid, (as an admin, so auth does not hide the
handlers); no 5xx and every response valid against the schema."""

from __future__ import annotations

import itertools

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from grader.store.keys import create_key

MAX_EXAMPLES = 8


@pytest.mark.slow
def test_api_conforms_to_its_schema(client, store):  # type: ignore[no-untyped-def]
    _, token = create_key(store, name="fuzzer", role="admin")
    auth = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    # The admin key below replaces any generated Authorization header; a generated (negative) one would
    # never be sent, yet schemathesis would still expect the request to be refused for it.
    schema.config.generation.update(with_security_parameters=False)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    failures = []
    for operation, mode in itertools.product(operations, schemathesis.GenerationMode):

        @given(case=operation.as_strategy(mode))
        @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                  derandomize=True, database=None)
        def check(case):  # type: ignore[no-untyped-def]
            # Schema-valid is not always semantically valid here (a manifest is TOML whose meaning the
            # JSON Schema cannot express), so schema-valid requests may rightly get 4xx.
            case.call_and_validate(headers=auth, excluded_checks=[schemathesis.checks.positive_data_acceptance])

        try:
            check()
        except Unsatisfiable:  # an operation without inputs has no schema-invalid requests
            assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label
        except Exception as exc:  # noqa: BLE001 - collect every operation's failure, then report all
            failures.append(f"{operation.label} ({mode.value}): {exc}")
    assert not failures, "\n\n".join(failures)
