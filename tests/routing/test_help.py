"""help() on the routers reads well: the hot methods of the compiled base
have signatures and docstrings, and Cython's internals stay out of the page."""

from __future__ import annotations

import inspect
import pydoc
import re

import pytest

from shardhash.routing import BoundedLoadRouter, JumpRouter, MementoRouter, MultiProbeRouter
from shardhash.routing._kernels import RouterCore

METHODS = ("route", "route_index", "route_hash", "route_many", "route_hashes")
INTERNALS = ("__reduce_cython__", "__setstate_cython__", "__pyx_vtable__", "__test__")


@pytest.mark.parametrize("cls", [JumpRouter, RouterCore])
@pytest.mark.parametrize("name", METHODS)
def test_method_has_a_signature_and_a_docstring(cls: type, name: str) -> None:
    method = getattr(cls, name)
    params = list(inspect.signature(method).parameters)
    assert params[0] == "self"
    assert len(params) >= 2
    assert (method.__doc__ or "").strip()


@pytest.mark.parametrize("cls", [JumpRouter, RouterCore, MementoRouter, MultiProbeRouter, BoundedLoadRouter])
def test_help_shows_the_api_without_cython_internals(cls: type) -> None:
    page = re.sub(".\b", "", pydoc.render_doc(cls, renderer=pydoc.TextDoc()))  # no overstrike bold
    for name in METHODS:
        assert f"{name}(self, " in page, name
    for name in INTERNALS:
        assert name not in page, name


def test_bound_route_has_a_signature() -> None:
    r = JumpRouter(["a", "b"])
    assert list(inspect.signature(r.route).parameters) == ["key"]
