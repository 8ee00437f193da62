"""Pydantic models derived from the proto's message descriptors: the machinery of the REST schema.

A model has its message's fields, in the proto's order. A field's type comes from its descriptor
(a scalar, an enum, a message, repeated as a list, a map as an object), its description from the
proto's comment (``evalserve.v1.proto_docs``, written by ``proto/generate.py``). Where the JSON
form differs from that, a ``JsonField`` says how; a ``JsonMessage`` names the model of a message
and how its fields default. ``service.rest_json`` is the table of both, ``service.rest_models``
builds the models with ``derive``.

By default a request field may be absent or null (``T | None = None``; the decoder reads a null
as an absent field) and a response field is always present, null only when it is a proto3
``optional`` scalar that is unset (``T | None``, required).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from pydantic import BaseModel, ConfigDict, Field, create_model

from evalserve.v1.proto_docs import DOCS

__all__ = ["FROM_PROTO", "JsonField", "JsonMessage", "derive", "proto_doc"]

FROM_PROTO: Any = object()  # a JsonField's default: as the descriptor and the side say

_SCALARS: dict[int, type] = {
    FieldDescriptor.TYPE_DOUBLE: float,
    FieldDescriptor.TYPE_FLOAT: float,
    FieldDescriptor.TYPE_INT64: int,
    FieldDescriptor.TYPE_UINT64: int,
    FieldDescriptor.TYPE_INT32: int,
    FieldDescriptor.TYPE_UINT32: int,
    FieldDescriptor.TYPE_SINT64: int,
    FieldDescriptor.TYPE_SINT32: int,
    FieldDescriptor.TYPE_FIXED64: int,
    FieldDescriptor.TYPE_FIXED32: int,
    FieldDescriptor.TYPE_SFIXED64: int,
    FieldDescriptor.TYPE_SFIXED32: int,
    FieldDescriptor.TYPE_BOOL: bool,
    FieldDescriptor.TYPE_STRING: str,
    FieldDescriptor.TYPE_BYTES: str,  # base64 text in JSON (proto3's JSON mapping)
}


@dataclass(frozen=True, slots=True)
class JsonField:
    """How one field's JSON form differs from its proto field; unset parts follow the proto.

    ``type``: the JSON value's type, without null. ``required`` / ``nullable`` / ``default``:
    instead of the side's rule. ``doc``: the description instead of the proto comment;
    ``note``: a sentence added after it. ``schema``: more arguments of pydantic's ``Field``
    (bounds, ``pattern``, ``json_schema_extra``).
    """

    type: Any = FROM_PROTO
    required: bool | None = None
    nullable: bool | None = None
    default: Any = None
    doc: str | None = None
    note: str | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)


Extra = Literal["forbid", "allow", "ignore"]


@dataclass(frozen=True, slots=True)
class JsonMessage:
    """The JSON model of a proto message.

    ``name``: the model's (and the OpenAPI component's) name. ``absent``: its fields may be
    absent or null (the request rule), else they are always present (the response rule).
    ``extra``: what the model does with unknown keys (``forbid``: documented as refused).
    ``drop``: proto fields without a JSON field of their own. ``base``: the proto name of a
    message whose model this one extends (its fields come first). ``doc``: the description
    instead of the message's comment. ``fields``: the fields whose JSON form differs.
    """

    name: str
    absent: bool
    extra: Extra
    fields: Mapping[str, JsonField] = field(default_factory=dict)
    drop: frozenset[str] = frozenset()
    base: str | None = None
    doc: str | None = None


Rule = Callable[[FieldDescriptor], JsonField | None]


def proto_doc(name: str) -> str | None:
    """The proto's comment on a message (``Message``) or field (``Message.field``)."""
    return DOCS.get(name)


def _one_line(text: str | None) -> str | None:
    return None if text is None else " ".join(text.split())


def _description(message: str, fd: FieldDescriptor, json: JsonField) -> str | None:
    text = json.doc if json.doc is not None else proto_doc(f"{message}.{fd.name}")
    if json.note is not None:
        text = json.note if text is None else f"{text} {json.note}"
    return _one_line(text)


class _Derivation:
    def __init__(
        self,
        package: Any,
        messages: Mapping[str, JsonMessage],
        given: Mapping[str, type[BaseModel]],
        enums: Mapping[str, Any],
        rule: Rule,
    ) -> None:
        self.package = package
        self.messages = messages
        self.models: dict[str, type[BaseModel]] = dict(given)
        self.enums = enums
        self.rule = rule
        self._building: set[str] = set()
        self._recursive: set[str] = set()

    def model(self, proto: str) -> Any:
        """The model of ``proto``; inside its own fields (a response's map of responses, say)
        a forward reference by its model's name, resolved once the model is built."""
        if proto not in self.models:
            if proto not in self.messages:
                raise LookupError(f"message {proto} has no JSON model: add it to the table")
            json = self.messages[proto]
            if proto in self._building:
                self._recursive.add(proto)
                return json.name
            self._building.add(proto)
            try:
                built = self._build(proto, json)
            finally:
                self._building.discard(proto)
            if proto in self._recursive:
                built.model_rebuild(_types_namespace={json.name: built})
            self.models[proto] = built
        return self.models[proto]

    def _build(self, proto: str, json: JsonMessage) -> type[BaseModel]:
        descriptor: Descriptor = self.package.message_types_by_name[proto]
        names = {fd.name for fd in descriptor.fields}
        unknown = (set(json.fields) | json.drop) - names
        if unknown:
            raise LookupError(f"{proto} has no field {sorted(unknown)}: fix the table")
        fields = {
            fd.name: self._field(proto, fd, json)
            for fd in descriptor.fields
            if fd.name not in json.drop
        }
        base: type[BaseModel] = (
            self.model(json.base) if json.base is not None else _BASES[json.extra]
        )
        doc = _one_line(json.doc if json.doc is not None else proto_doc(proto))
        return create_model(  # type: ignore[call-overload, no-any-return]
            json.name, __base__=base, __module__=_MODULE, __doc__=doc, **fields
        )

    def _field(self, message: str, fd: FieldDescriptor, parent: JsonMessage) -> tuple[Any, Any]:
        json = parent.fields.get(fd.name) or self.rule(fd) or JsonField()
        value = self._value(fd) if json.type is FROM_PROTO else json.type
        required = not parent.absent if json.required is None else json.required
        optional_scalar = fd.has_presence and fd.message_type is None
        nullable = (parent.absent or optional_scalar) if json.nullable is None else json.nullable
        annotation = value | None if nullable else value
        default = ... if required else json.default
        return annotation, Field(
            default, description=_description(message, fd, json), **dict(json.schema)
        )

    def _value(self, fd: FieldDescriptor) -> Any:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            key, value = (fd.message_type.fields_by_name[n] for n in ("key", "value"))
            return dict[self._one(key), self._one(value)]  # type: ignore[misc]
        one = self._one(fd)
        return list[one] if fd.is_repeated else one  # type: ignore[valid-type]

    def _one(self, fd: FieldDescriptor) -> Any:
        if fd.message_type is not None:
            return self.model(fd.message_type.name)
        if fd.enum_type is not None:
            if fd.enum_type.full_name not in self.enums:
                raise LookupError(f"enum {fd.enum_type.full_name} has no JSON form in the table")
            return self.enums[fd.enum_type.full_name]
        return _SCALARS[fd.type]


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Allow(BaseModel):
    model_config = ConfigDict(extra="allow")


_BASES: dict[Extra, type[BaseModel]] = {"forbid": _Forbid, "allow": _Allow, "ignore": BaseModel}
_MODULE = "evalserve.service.rest_models"  # where the models are published


def derive(
    package: Any,
    messages: Mapping[str, JsonMessage],
    *,
    given: Mapping[str, type[BaseModel]],
    enums: Mapping[str, Any],
    rule: Rule,
) -> dict[str, type[BaseModel]]:
    """The JSON model of each message of ``messages`` (by proto name), from ``package``'s
    descriptors (a ``FileDescriptor``). ``given``: messages whose model is built elsewhere;
    ``enums``: the JSON type of each enum, by full name; ``rule``: a field's ``JsonField``
    when its message's entry has none (rules by type or name)."""
    derivation = _Derivation(package, messages, given, enums, rule)
    return {proto: derivation.model(proto) for proto in messages}
