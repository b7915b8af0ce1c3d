"""docs/reference.md is generated from the code (adrop.reference) and current; every key and parameter is in it."""

import dataclasses
from pathlib import Path

from adrop import methods, reference

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_reference_is_current():
    assert (ROOT / "docs" / "reference.md").read_text() == reference.markdown(), (
        "docs/reference.md is stale: python -m adrop.reference > docs/reference.md"
    )


def test_every_key_group_option_and_method_parameter_is_in_it():
    from adrop.train.config.schema import Config, schema_keys

    text = reference.markdown()

    def keys(schema, prefix=""):
        for key, sub in schema.items():
            yield from keys(sub, f"{prefix}{key}.") if sub else [f"{prefix}{key}"]

    assert all(f"| `{key}` |" in text for key in keys(schema_keys(Config)))
    for name in methods.names():
        assert f"### `method={name}`" in text and f"| `method={name}` |" in text
        assert all(f"| `{f.name}` |" in text for f in dataclasses.fields(methods.get(name).Params))


def test_comments_are_read_with_their_continuations_and_from_base_classes():
    @dataclasses.dataclass
    class Base:
        a: int = 1  # the first
        #                continued

    @dataclasses.dataclass
    class Child(Base):
        # above b
        b: str = "x"  # and after it

    assert reference.field_comments(Child) == {"a": "the first continued", "b": "above b and after it"}
