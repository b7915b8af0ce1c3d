"""What the tests share: the engine as tests drive it (`helpers.engines`), and the tolerances and configurations by
which a stack, a compiled engine or a user's loop is compared with the reference (`helpers.stacks`). Fixtures are in
tests/conftest.py."""
