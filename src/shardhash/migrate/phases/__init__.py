"""The phases of a migration, one module each, as :class:`~shardhash.migrate.Migration`
runs them (see docs/migrate.md for the protocol and docs/architecture.md for the layout):

:mod:`.prepare` -> :mod:`.copy` -> :mod:`.catchup` -> :mod:`.verify` ->
:mod:`.cutover` (fence, commit, reconcile, retain) -> :mod:`.cleanup`, or
:mod:`.rollback` at any point before the cleanup; :mod:`.columns` holds the
row checks the copy and the catch-up share, :mod:`.status` what an operator
sees.  Each function takes the :class:`~shardhash.migrate.Migration` it
works for and reaches the other phases through its methods.
"""
