"""Token providers for the login tests (``token_provider: tests.tokens:NAME``): each records
that it was asked, so a test can tell that a client used it."""

from __future__ import annotations

import time

from audit.sandbox.token_endpoint import unsecured_jwt

# The tokens handed out, newest last.
ISSUED: list[str] = []


def auditor() -> tuple[str, float]:
    """An unsecured JWT for the sandbox's ``auditor``: what the brokers' OAUTHBEARER
    listener accepts."""
    token = unsecured_jwt("auditor")
    ISSUED.append(token)
    return token, time.time() + 3600


def msk_signed() -> tuple[str, float]:
    """Amazon MSK's IAM token, signed by AWS's signer (``audit.collect.logins:aws_msk_iam``)."""
    from audit.collect.logins import aws_msk_iam

    token, expiry = aws_msk_iam()
    ISSUED.append(token)
    return token, expiry
