"""`mockserver validate`: check the description and fixtures; list every problem."""
from __future__ import annotations

import argparse

from ..base.errors import LoadError
from ..pipeline.pipeline import Pipeline
from .flags import add_options, add_sources, located, options_from, report, warn

HELP = "check the description and fixtures; list every problem"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_sources(parser)
    add_options(parser, "stateful")


def run(args: argparse.Namespace) -> int:
    """0 when all is well (warnings are said), 1 with the problems listed, 2 when there is no description."""
    found = located(args)
    if found is None:
        return 2
    spec, fixtures = found
    try:
        pipeline = Pipeline.load(spec, fixtures, options_from(args))
    except LoadError as exc:
        report(exc)
        return 1
    warn(pipeline.warnings)
    for inferred in pipeline.inferred:
        print(f"stateful: {inferred.operation} {inferred.what}")
    count = sum(len(c.items) for c in pipeline.fixtures.collections.values())
    held = (f"{fixtures}: {len(pipeline.fixtures.files)} files, {len(pipeline.fixtures.collections)} "
            f"collections, {count} items" if fixtures else "no fixtures")
    print(f"{spec}: {len(pipeline.spec.operations)} operations; {held}. All is well.")
    return 0
