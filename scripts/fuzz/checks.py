# The API's own check for Schemathesis (loaded as its hooks by scripts/fuzz-api.ts), in place of its
# positive_data_acceptance: a request the operation's schema calls valid is accepted, or refused only for a reason the
# document states. Stated are: a 409 (the state of what the request names) and a 429 (a limit or quota); a 400 or a
# 422 whose every error names one of the operation's `x-rules` (`errors[].rule`); a 422 `exam-service-refused` on an
# operation with a rule the exam service judges; a 404 to a DELETE (what it names is gone: discarded by an earlier
# one). Anything else (a 400 for the schema, a 404 for a seeded id, a 422 the document gives no rule for) is a schema
# the server does not keep, and fails the run. No request data is printed.
import json

import schemathesis

STATED_STATUSES = {409, 429}


def _problem(response):
    try:
        body = json.loads(response.content or b"null")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


@schemathesis.check
def refused_only_for_stated_reasons(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    status = response.status_code
    if status < 400 or status >= 500 or status in STATED_STATUSES:
        return None
    operation = case.operation.definition.raw
    rules = {r.get("name"): r for r in operation.get("x-rules", []) if isinstance(r, dict)}
    problem = _problem(response)
    kind = str(problem.get("type", "")).rsplit(":", 1)[-1]
    errors = problem.get("errors") or []
    if status in (400, 422) and errors and all(e.get("rule") in rules for e in errors):
        return None
    if status == 404 and case.method.upper() == "DELETE":
        return None
    if status == 422 and kind == "exam-service-refused" and any(r.get("judge") == "exam-service" for r in rules.values()):
        return None
    named = ", ".join(f"{e.get('field')}: {e.get('message')}" for e in errors[:3]) or problem.get("detail", "")
    raise AssertionError(
        f"A request the schema calls valid was refused with {status} ({kind or 'no problem type'}) for a reason "
        f"the document does not state: {named}"
    )
