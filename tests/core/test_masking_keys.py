"""Masking's remembered key answers and its one check for keys that are not text.

The answers must not depend on what was asked before: a key seen in a plain
dict, then in a dict beside a secret; keys longer than the cache keeps; more
keys than it keeps; dicts whose keys are not text (never a secret, walked).
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.masking import MASK, is_secret_key, mask_secrets, masked, scrub, secret_values


def test_a_key_answers_alike_wherever_it_was_seen_first() -> None:
    plain = {"bmc_address": "10.0.0.1", "bmc_user": "admin"}
    assert masked(plain) is plain  # nothing secret: not copied
    beside = {"bmc_address": "10.0.0.1", "bmc_user": "admin", "bmc_password": "pw-1"}
    assert masked(beside) == {"bmc_address": "10.0.0.1", "bmc_user": "admin", "bmc_password": MASK}
    assert masked(beside) is not beside
    assert secret_values(beside) == {"pw-1"}
    for _ in range(2):  # asked again: the remembered answers
        assert is_secret_key("bmc_password")
        assert not is_secret_key("bmc_user")
        assert masked(plain) is plain
        assert secret_values(beside, plain) == {"pw-1"}


def test_long_keys_and_more_keys_than_remembered_answer_alike() -> None:
    long_plain, long_secret = "x" * 200, "x" * 200 + "_password"
    for _ in range(2):
        assert not is_secret_key(long_plain)
        assert is_secret_key(long_secret)
        assert masked({long_plain: "v", long_secret: "hidden"}) == {
            long_plain: "v",
            long_secret: MASK,
        }
    many = {f"field_{i}": "value" for i in range(10_000)}
    assert masked(many) is many
    assert masked({**many, "field_token": "t-1"})["field_token"] == MASK
    assert secret_values({**many, "field_token": "t-1"}) == {"t-1"}
    assert not is_secret_key("field_9999")
    assert is_secret_key("field_token")


def test_keys_that_are_not_text_are_never_secret_and_their_dicts_are_walked() -> None:
    mixed: dict[Any, Any] = {1: "one", None: "none", ("a",): "t", "password": "pw-2"}
    assert mask_secrets(mixed) == {1: "one", None: "none", ("a",): "t", "password": MASK}
    assert masked(mixed) == mask_secrets(mixed)
    assert secret_values(mixed) == {"pw-2"}
    numbered: dict[Any, Any] = {1: "one", 2: {"token": "tok-3"}}
    assert mask_secrets(numbered) == {1: "one", 2: {"token": MASK}}
    assert secret_values(numbered) == {"tok-3"}
    only: dict[Any, Any] = {1: "password", 2: "x"}
    assert masked(only) == only
    assert secret_values(only) == set()
    assert scrub("pw-2 and tok-3", secret_values(mixed, numbered)) == f"{MASK} and {MASK}"
