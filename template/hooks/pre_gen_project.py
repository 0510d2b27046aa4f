"""Refuse answers that would bake a project which cannot work, before any file exists.

Cookiecutter checks only that choice answers are among the choices; a package
name that is not an identifier, or a GCP project id or region Google would
refuse, would otherwise surface much later as an import error or a failed
`terraform apply`; so would a framework agent without a store for its tool ledger. Each rejection is one line naming the answer and the rule,
and a non-zero exit (cookiecutter raises `FailedHookException`).
"""

import keyword
import re
import sys

ANSWERS = {
    "package_name": {{ cookiecutter.package_name | tojson }},
    "gcp_project": {{ cookiecutter.gcp_project | tojson }},
    "gcp_region": {{ cookiecutter.gcp_region | tojson }},
    "beam_agents_requirement": {{ cookiecutter.beam_agents_requirement | tojson }},
}
FRAMEWORK = {{ cookiecutter.framework | tojson }}
LONGTERM_BACKEND = {{ cookiecutter.longterm_backend | tojson }}

RULES = {
    "package_name": (
        re.compile(r"[a-z_][a-z0-9_]*"),
        "must be a lowercase Python identifier (letters, digits, underscores; "
        "not starting with a digit)",
    ),
    "gcp_project": (
        re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]"),
        "must be a Google Cloud project id: 6-30 characters, lowercase letters, "
        "digits and hyphens, starting with a letter, not ending with a hyphen",
    ),
    "gcp_region": (
        re.compile(r"[a-z]+(-[a-z]+)+[0-9]+"),
        "must be a Google Cloud region such as europe-west1 or us-central1",
    ),
    "beam_agents_requirement": (
        # An exact version, because the Terraform module sources are pinned to its tag.
        # The default, file://TEMPLATE_SOURCE, is resolved by the post-generation hook.
        re.compile(r"beam-agents\s*(==\s*[0-9][0-9A-Za-z.+!-]*|@\s*file://\S+)"),
        "must be a pip requirement for beam-agents: 'beam-agents==X.Y.Z' "
        "or 'beam-agents @ file:///path/to/checkout'",
    ),
}


def problem() -> str | None:
    """The first invalid answer, as one line, or None."""
    for name, (pattern, rule) in RULES.items():
        value = ANSWERS[name]
        if not pattern.fullmatch(value):
            return f"invalid {name} {value!r}: {rule}"
    if keyword.iskeyword(ANSWERS["package_name"]):
        return f"invalid package_name {ANSWERS['package_name']!r}: it is a Python keyword"
    if FRAMEWORK != "plain" and LONGTERM_BACKEND == "none":
        # A framework agent's tools run once through the tool ledger, which needs a
        # store every worker shares; with none, a retried bundle would run them again.
        return (
            f"invalid framework {FRAMEWORK!r} with longterm_backend 'none': its tools run "
            "once through the tool ledger, which lives in the long-term store; choose a "
            "longterm_backend (sqlite, postgres, redis, bigtable or firestore)"
        )
    return None


if __name__ == "__main__":
    message = problem()
    if message is not None:
        print(f"ERROR: {message}", file=sys.stderr)
        sys.exit(1)
