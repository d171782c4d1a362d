"""Answers in XML, for operations that declare an XML media type: the JSON value the mock made (an example,
generated data) written as XML by the standard library's ElementTree, following the schema's `xml` objects
(OpenAPI: `name`, `attribute`, `wrapped`, `prefix`, `namespace`). No schema, or none for a part: elements named
after the keys, list items `item`."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ..spec.schema_walk import SchemaWalk
from ..spec.schemas import Resolve

_NOT_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


def is_xml(media_type: str | None) -> bool:
    base = (media_type or "").split(";")[0].strip().lower()
    return base in ("application/xml", "text/xml") or base.endswith("+xml")


def _tag(name: str) -> str:
    """A valid XML name made of a JSON key: other characters become `_`, and it starts with a letter or `_`."""
    tag = _NOT_NAME.sub("_", name) or "_"
    return tag if re.match(r"[A-Za-z_]", tag) else "_" + tag


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class XmlWriter:
    """Writes values as XML along their schemas; `resolve` follows `$ref`s across the description's files (None:
    values written without a schema)."""

    def __init__(self, resolve: Resolve | None) -> None:
        self._walk = SchemaWalk(resolve)

    def write(self, value: Any, schema: Any, uri: str) -> bytes:
        node, uri = self._walk.deref(schema, uri)
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        default = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and "/" in ref else "root"
        root = self._element(None, _xml(node).get("name", default), node)
        self._fill(root, value, node, uri)
        return ET.tostring(root, encoding="utf-8", xml_declaration=True)

    def _element(self, parent: ET.Element | None, name: str, node: Any) -> ET.Element:
        xml = _xml(node)
        tag = _tag(f"{xml['prefix']}:{name}" if xml.get("prefix") else name)
        element = ET.Element(tag) if parent is None else ET.SubElement(parent, tag)
        if xml.get("namespace"):
            element.set(f"xmlns:{xml['prefix']}" if xml.get("prefix") else "xmlns", str(xml["namespace"]))
        return element

    def _fill(self, element: ET.Element, value: Any, node: Any, uri: str) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                sub_node, sub_uri = self._walk.property(node, uri, key)
                xml = _xml(sub_node)
                name = str(xml.get("name", key))
                if xml.get("attribute") and not isinstance(sub, (dict, list)):
                    element.set(_tag(f"{xml['prefix']}:{name}" if xml.get("prefix") else name), _text(sub))
                else:
                    self._child(element, name, sub, sub_node, sub_uri)
        elif isinstance(value, list):  # a list at the root: its items inside the root element
            item_node, item_uri = self._walk.items(node, uri)
            for item in value:
                self._fill(self._element(element, str(_xml(item_node).get("name", "item")), item_node), item,
                           item_node, item_uri)
        else:
            element.text = _text(value)

    def _child(self, parent: ET.Element, name: str, value: Any, node: Any, uri: str) -> None:
        """A property: an element; a list, one element per item, named by the items' `xml.name` (else the
        property's), inside a wrapper element when the schema says `wrapped: true`."""
        if not isinstance(value, list):
            self._fill(self._element(parent, name, node), value, node, uri)
            return
        item_node, item_uri = self._walk.items(node, uri)
        holder = self._element(parent, name, node) if _xml(node).get("wrapped") else parent
        for item in value:
            self._fill(self._element(holder, str(_xml(item_node).get("name", name)), item_node), item, item_node,
                       item_uri)


def _xml(node: Any) -> dict[str, Any]:
    xml = node.get("xml") if isinstance(node, dict) else None
    return xml if isinstance(xml, dict) else {}
