"""The description as one document: what a client generator (openapi-typescript, openapi-generator) is fed, which
cannot follow a `$ref` into another file of the mock's folder. Each `$ref` into another file is replaced by what it
points to, where it is first met; a later `$ref` to the same place (a schema that contains itself, too) points to
that first copy inside the one document. `$ref`s within the root document stay as they are."""
from __future__ import annotations

from typing import Any
from urllib.parse import urldefrag, urljoin

from ..base.pointers import escape_token
from .documents import DocumentSet


def bundle(docs: DocumentSet) -> dict[str, Any]:
    """The root document with every other file's part it uses copied in (the documents are not changed)."""
    return _Bundler(docs).run()


class _Bundler:
    def __init__(self, docs: DocumentSet) -> None:
        self.docs = docs
        self.root_uri = next(uri for uri, doc in docs.documents.items() if doc is docs.root)
        self.placed: dict[str, str] = {}  # URI of a part of another file -> its pointer in the bundle
        self.named = 0  # parts kept under components/schemas (a `$ref` beside other keywords must stay one)
        self.extra: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        root = self.docs.root.data
        out = self._walk(root, self.root_uri, "")
        if self.extra:
            components = out.setdefault("components", {})
            components["schemas"] = {**components.get("schemas", {}), **self.extra}
        return out

    def _walk(self, node: Any, base: str, pointer: str) -> Any:
        if isinstance(node, list):
            return [self._walk(item, base, f"{pointer}/{i}") for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = urljoin(base, ref)
            doc, fragment = urldefrag(target)
            if doc == self.root_uri:
                return {**node, "$ref": "#" + fragment}
            if target in self.placed:
                return {**node, "$ref": "#" + self.placed[target]}
            if len(node) == 1:
                self.placed[target] = pointer  # before going in: a part that contains itself points here
                return self._walk(self.docs.lookup(target), target, pointer)
            self.named += 1
            name = f"bundled{self.named}"
            place = f"/components/schemas/{escape_token(name)}"
            self.placed[target] = place
            self.extra[name] = self._walk(self.docs.lookup(target), target, place)
            return {**node, "$ref": "#" + place}
        return {key: self._walk(value, base, f"{pointer}/{escape_token(key)}") for key, value in node.items()}
