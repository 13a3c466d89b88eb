"""Structured output against mock-llm: an answer valid first time, one fixed after the follow-up
that names the validation errors, one that never matches (a typed StructuredOutputError after
1 + the limit requests); dataclasses, pydantic models and JSON Schema dicts as the format."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

import pydantic
import pytest

import robota
from robota import (
    InteractiveSession,
    StructuredOutputError,
    create_query,
    json_schema_of,
    output_format,
    parse_structured_output,
)

from conftest import MockLlm


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


@dataclass
class District:
    name: str
    area_km2: float


@dataclass
class City:
    """A city and its people."""

    name: str
    population: int
    size: Size = Size.SMALL
    districts: List[District] = field(default_factory=list)
    nickname: Optional[str] = None


class CityModel(pydantic.BaseModel):
    name: str
    population: int = pydantic.Field(ge=0)


LISBON = '{"name": "Lisbon", "population": 545000, "size": "large", "districts": [{"name": "Alfama", "area_km2": 1}]}'


def anthropic(mock_llm: MockLlm) -> robota.AnthropicProvider:
    return robota.AnthropicProvider("claude-test", api_key="sk", base_url=mock_llm.base_url, max_retries=0)


def last_user_text(request: Dict[str, Any]) -> str:
    content = request["body"]["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def test_a_dataclass_schema_names_its_fields_types_and_required_ones() -> None:
    schema = json_schema_of(City)
    assert schema["type"] == "object"
    assert schema["required"] == ["name", "population"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["population"] == {"type": "integer"}
    assert schema["properties"]["size"] == {"enum": ["small", "large"]}
    assert schema["properties"]["districts"]["items"]["properties"]["area_km2"] == {"type": "number"}
    assert schema["properties"]["nickname"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert schema["description"] == "A city and its people."
    assert output_format(City)["name"] == "City"
    assert output_format({"type": "object"}) == {"type": "json_schema", "schema": {"type": "object"}}


def test_a_dataclass_field_without_a_json_type_is_refused_naming_it() -> None:
    @dataclass
    class Bad:
        tags: set  # type: ignore[type-arg]

    with pytest.raises(TypeError, match="Bad.tags"):
        json_schema_of(Bad)
    with pytest.raises(TypeError):
        output_format(42)  # type: ignore[arg-type]


def test_parsing_builds_nested_dataclasses_and_enums() -> None:
    city = parse_structured_output(
        {"name": "Porto", "population": 230000, "size": "small", "districts": [{"name": "Ribeira", "area_km2": 2}]},
        City,
    )
    assert city == City("Porto", 230000, Size.SMALL, [District("Ribeira", 2.0)])
    assert isinstance(city.districts[0].area_km2, float)


async def test_a_valid_answer_first_time_is_returned_typed(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": LISBON}])
    query = create_query(provider=anthropic(mock_llm), **opts)
    city = await query.structured("Largest city of Portugal?", City)
    assert city == City("Lisbon", 545000, Size.LARGE, [District("Alfama", 1.0)])
    assert len(mock_llm.requests()) == 1


async def test_an_invalid_answer_is_fixed_after_the_follow_up_names_the_errors(
    mock_llm: MockLlm, opts: Dict[str, Any]
) -> None:
    mock_llm.script([{"text": '{"name": "Lisbon", "population": -5}'}, {"text": '{"name": "Lisbon", "population": 545000}'}])
    query = create_query(provider=anthropic(mock_llm), **opts)
    city = await query.structured("Largest city of Portugal?", CityModel)
    assert isinstance(city, CityModel) and city.population == 545000
    sent = mock_llm.requests()
    assert len(sent) == 2
    follow_up = last_user_text(sent[1])
    assert "/population" in follow_up, follow_up


async def test_an_answer_that_never_matches_raises_after_the_limit(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": "Lisbon, about half a million people."}], repeat=True)
    query = create_query(provider=anthropic(mock_llm), max_structured_output_retries=2, **opts)
    with pytest.raises(StructuredOutputError) as raised:
        await query.structured("Largest city of Portugal?", {"type": "object", "required": ["name"]})
    assert isinstance(raised.value, robota.RobotaError)
    assert "did not match" in str(raised.value)
    assert len(mock_llm.requests()) == 3, "1 request + 2 follow-ups"


async def test_a_query_wide_format_fills_structured_output(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": '```json\n{"answer": "yes"}\n```'}])
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"]}
    query = create_query(provider=anthropic(mock_llm), output_format=schema, **opts)
    result = await query("Is Lisbon in Portugal?")
    assert result.structured_output == {"answer": "yes"}
    assert result.status == "complete"


async def test_a_malformed_schema_is_an_invalid_argument(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([])
    query = create_query(provider=anthropic(mock_llm), **opts)
    with pytest.raises(robota.InvalidArgumentError):
        await query("hi", output_format={"type": "no-such-type"})
    assert mock_llm.requests() == []


async def test_an_interactive_session_returns_structured_output_and_fails_typed(
    mock_llm: MockLlm, opts: Dict[str, Any]
) -> None:
    mock_llm.script(
        [
            {"text": '{"name": "Lisbon"}'},
            {"text": '{"name": "Lisbon", "population": 545000}'},
            {"text": "no JSON here"},
            {"text": "still none"},
        ]
    )
    completes: List[Any] = []
    async with InteractiveSession(
        provider=anthropic(mock_llm), output_format=CityModel, max_structured_output_retries=1, **opts
    ) as session:
        session.on("complete", completes.append)
        fixed = await session.submit("Largest city of Portugal?")
        assert fixed.status == "complete"
        assert fixed.structured_output == {"name": "Lisbon", "population": 545000}
        assert fixed.parse(CityModel) == CityModel(name="Lisbon", population=545000)
        assert completes[-1].structured_output == fixed.structured_output
        assert "/population" in last_user_text(mock_llm.requests()[1]) or "population" in last_user_text(
            mock_llm.requests()[1]
        )
        failed = await session.submit("And of Spain?")
        assert failed.status == "error"
        assert (failed.error_details or {}).get("kind") == "structured_output"
        assert (failed.outcome or {}).get("structured_output_errors")
        with pytest.raises(StructuredOutputError):
            failed.parse(CityModel)
    assert len(mock_llm.requests()) == 4


def test_literal_fields_become_enums() -> None:
    @dataclass
    class Answer:
        verdict: Literal["yes", "no"]

    assert json_schema_of(Answer)["properties"]["verdict"] == {"enum": ["yes", "no"]}


async def test_a_prompt_takes_its_own_output_format(mock_llm: MockLlm, opts: Dict[str, Any]) -> None:
    mock_llm.script([{"text": LISBON}, {"text": "Just text."}])
    async with InteractiveSession(provider=anthropic(mock_llm), **opts) as session:
        turn = await session.submit("Largest city of Portugal?", output_format=City)
        assert turn.parse(City).size is Size.LARGE
        plain = await session.submit("Thanks")
        assert plain.structured_output is None and plain.response == "Just text."
        with pytest.raises(robota.InvalidArgumentError):
            await session.submit("again", output_format={"type": "no-such-type"})
    assert len(mock_llm.requests()) == 2
