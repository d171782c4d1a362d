"""Parameters fixed to one value by the description: a `const`, or an `enum` of one (Airflow's `dag_id: "~"`, every
DAG). Whatever fills a request, it keeps that value: in the stateful phase a link or a value learnt from an earlier
answer would replace it, and discovery needs no value for it. A request that breaks the parameter's location on
purpose (a negative case) is left as it is, so `negative_data_rejection` still sends other values."""
from __future__ import annotations

from typing import Any

from schemathesis import Case
from schemathesis.core.parameters import ParameterLocation

from ..spec.documents import DocumentSet, RefError
from ..spec.index import Operation, Parameter, SpecIndex

Combo = dict[tuple[str, str], Any]  # (location, name) -> value
_CHAIN = 32  # `$ref`s followed to a parameter's schema


def schema_of(parameter: Parameter, docs: DocumentSet) -> Any:
    """The parameter's schema, `$ref`s followed (None when one leads nowhere)."""
    if parameter.schema is None:
        return None
    node, uri = parameter.schema.node, parameter.schema.uri
    for _ in range(_CHAIN):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node
        try:
            node, uri = docs.resolve(node["$ref"], uri)
        except RefError:
            return None
    return None


def fixed(op: Operation, docs: DocumentSet) -> Combo:
    """The operation's parameters the description fixes to one value, with that value."""
    found: Combo = {}
    for parameter in op.parameters:
        node = schema_of(parameter, docs)
        if not isinstance(node, dict):
            continue
        if "const" in node:
            found[(parameter.location, parameter.name)] = node["const"]
        elif isinstance(node.get("enum"), list) and len(node["enum"]) == 1:
            found[(parameter.location, parameter.name)] = node["enum"][0]
    return found


class KeepFixed:
    """Schemathesis `map_case` hook (every phase, the stateful one included): each fixed parameter of the case's
    operation gets its value back, unless the case breaks that parameter's location on purpose."""

    def __init__(self, spec: SpecIndex) -> None:
        self.fixed = {f"{op.method.upper()} {op.path}": values for op in spec.operations.values()
                      if (values := fixed(op, spec.docs))}

    def __call__(self, context: Any, case: Case) -> Case:
        for (location, name), value in self.fixed.get(case.operation.label, {}).items():
            if case.meta is not None and case.meta.is_negative_at(ParameterLocation(location)):
                continue
            container = {"path": case.path_parameters, "query": case.query, "header": case.headers,
                         "cookie": case.cookies}[location]
            if container is not None and name in container:  # a parameter left out stays out
                container[name] = value
        return case
