"""Test-only pure-Python oracles: short, obviously-correct references.

One module per placement strategy (``jump``, ``ring``, ``rendezvous``,
``maglev``, ``memento``, ``multiprobe``, ``bounded``, ``replicas``;
``routing.ReferenceRouter`` routes any router document with them) and per
compatible system (``postgres``, ``guava``, ``cassandra``, ``redis``,
``ketama``, ``mongo``, ``vitess``).  Each is written from the written
description (docs/routers.md, docs/compat.md) or the system's own source,
never from the compiled code, so that the tests check the kernels and the
documentation at once.  Keys are hashed by ``hasher.ReferenceHasher``: the
codec of docs/protocol.md in plain Python and the ``xxhash`` and ``mmh3``
packages; no module here imports shardhash's compiled modules
(tests/test_references.py checks it).

They are slow by design and the library never imports them; they ship with
the package only so that the test suite runs against an installed wheel.
"""
