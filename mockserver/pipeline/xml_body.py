"""Answers in XML, for operations that declare an XML media type: the JSON value the mock made (an example,
generated data) written as XML by the standard library's ElementTree, following the schema's `xml` objects
(OpenAPI: `name`, `attribute`, `wrapped`, `prefix`, `namespace`). An element is named by its schema's `xml.name`,
else by the component a `$ref` names (the root `<Pet>`, a root list's items), else by its key; list items of a
property take the property's name. Whatever the value holds, the body is well-formed: names are made valid XML
names, a prefix is used only where its namespace is declared, characters XML cannot carry become U+FFFD, and a
text answer is sent as it is only when it is XML already."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ..base.http import bare_media_type
from ..spec.schema_walk import SchemaWalk
from ..spec.schemas import Resolve

_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]")
_NOT_XML_TEXT = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ROOT = "root"  # the root's name when nothing in the description names it


def is_xml(media_type: str | None) -> bool:
    base = bare_media_type(media_type)
    return base in ("application/xml", "text/xml") or base.endswith("+xml")


def _tag(name: str) -> str:
    """A valid XML name (without a prefix) made of a JSON key: other characters become `_`, it starts with a
    letter or `_`, and not with `xml` (reserved: `xmlns` would declare a namespace)."""
    tag = _NOT_NAME.sub("_", name) or "_"
    return tag if re.match(r"[A-Za-z_]", tag) and not tag.lower().startswith("xml") else "_" + tag


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else _NOT_XML_TEXT.sub("\ufffd", str(value))


def _xml(node: Any) -> dict[str, Any]:
    xml = node.get("xml") if isinstance(node, dict) else None
    return xml if isinstance(xml, dict) else {}


def _ref_name(node: Any) -> str | None:
    """The name of the component a `$ref` points to (`#/components/schemas/Pet`: Pet)."""
    ref = node.get("$ref") if isinstance(node, dict) else None
    return ref.rsplit("/", 1)[-1] or None if isinstance(ref, str) and "/" in ref else None


Scope = frozenset[str]  # the prefixes whose namespace an element or one above it declares


class XmlWriter:
    """Writes values as XML along their schemas; `resolve` follows `$ref`s across the description's files (None:
    values written without a schema)."""

    def __init__(self, resolve: Resolve | None) -> None:
        self._walk = SchemaWalk(resolve)

    def write(self, value: Any, schema: Any, uri: str) -> bytes:
        if isinstance(value, str) and _is_xml_text(value):
            return value.encode()  # an XML text the description wrote as its example
        node, uri = self._walk.deref(schema, uri)
        name = _xml(schema).get("name") or _xml(node).get("name") or _ref_name(schema) or _ROOT
        root, scope = self._element(None, str(name), node, frozenset())
        if isinstance(value, list):  # a root list: its items inside the root element, named by their component
            raw, item_node, item_uri = self._items(node, uri)
            name = str(_xml(item_node).get("name") or _ref_name(raw) or "item")
            for item in value:
                self._fill(*self._element(root, name, item_node, scope), item, item_node, item_uri)
        else:
            self._fill(root, scope, value, node, uri)
        return ET.tostring(root, encoding="utf-8", xml_declaration=True)

    def _items(self, node: Any, uri: str) -> tuple[Any, Any, str]:
        """An array's items schema as written (its `$ref` names the items), and dereferenced."""
        for part, part_uri in self._walk.parts(node, uri):
            if isinstance(part.get("items"), dict):
                return (part["items"], *self._walk.items(part, part_uri))
        return None, None, uri

    def _element(self, parent: ET.Element | None, name: str, node: Any, scope: Scope) -> tuple[ET.Element, Scope]:
        """An element for a schema's value, its namespace declared as the schema says, and the prefixes in
        scope inside it."""
        xml = _xml(node)
        declared: dict[str, str] = {}
        prefix = xml.get("prefix")
        if xml.get("namespace"):
            if isinstance(prefix, str) and _tag(prefix) == prefix:
                declared[f"xmlns:{prefix}"] = _text(xml["namespace"])
                scope |= {prefix}
            elif not prefix:
                declared["xmlns"] = _text(xml["namespace"])
        tag = _name(name, xml, scope)
        element = ET.Element(tag, declared) if parent is None else ET.SubElement(parent, tag, declared)
        return element, scope

    def _fill(self, element: ET.Element, scope: Scope, value: Any, node: Any, uri: str) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                sub_node, sub_uri = self._walk.property(node, uri, key)
                xml = _xml(sub_node)
                name = str(xml.get("name") or key)
                if xml.get("attribute") and not isinstance(sub, (dict, list)):
                    element.set(_name(name, xml, scope), _text(sub))
                else:
                    self._child(element, scope, name, sub, sub_node, sub_uri)
        elif isinstance(value, list):  # a list inside a list: its items as elements named `item`
            item_node, item_uri = self._walk.items(node, uri)
            for item in value:
                self._fill(*self._element(element, str(_xml(item_node).get("name") or "item"), item_node, scope),
                           item, item_node, item_uri)
        else:
            element.text = _text(value)

    def _child(self, parent: ET.Element, scope: Scope, name: str, value: Any, node: Any, uri: str) -> None:
        """A property: an element; a list, one element per item, named by the items' `xml.name` (else the
        property's), inside a wrapper element when the schema says `wrapped: true`."""
        if not isinstance(value, list):
            self._fill(*self._element(parent, name, node, scope), value, node, uri)
            return
        item_node, item_uri = self._walk.items(node, uri)
        holder, inside = self._element(parent, name, node, scope) if _xml(node).get("wrapped") else (parent, scope)
        for item in value:
            self._fill(*self._element(holder, str(_xml(item_node).get("name") or name), item_node, inside),
                       item, item_node, item_uri)


def _name(name: str, xml: dict[str, Any], scope: Scope) -> str:
    """`name` as a valid XML name, with the schema's prefix where that prefix's namespace is declared (a prefix
    no namespace declares is left off: it would not be well-formed)."""
    prefix = xml.get("prefix")
    return f"{prefix}:{_tag(name)}" if isinstance(prefix, str) and prefix in scope else _tag(name)


def _is_xml_text(text: str) -> bool:
    """Whether a text answer is an XML document already (an example the description wrote as XML)."""
    if not text.lstrip().startswith("<"):
        return False
    try:
        ET.fromstring(text)
    except ET.ParseError:
        return False
    return True
