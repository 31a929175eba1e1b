"""The package's exceptions (the extension raises these, with the client's message)."""


class ReducerError(RuntimeError):
    """The reducers or the session failed: a lost reducer (with failover off, or too few
    left), a rank that disagrees (dtype, size, op, settings), a wrong job token, a timeout.
    The message is the client library's: it names the rank, the reducer, the setting.
    ``code`` names the client's error class ("peer failed", "rank mismatch", "authentication
    failed", "timeout", ...)."""

    code = ""


class SettingsError(ReducerError, ValueError):
    """A bad setting or argument, found before anything was sent (a missing REDUCER_ADDRS,
    a malformed duration, a non-contiguous tensor): the session, if any, is unaffected."""

    code = "invalid argument"
