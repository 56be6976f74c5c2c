"""Calls that Python would answer with a TypeError or a confusing message get one InputError naming the argument:
a missing or extra positional argument, an unknown keyword of example_names, TOML text where a file is named."""

import pytest

import jaxq


@pytest.mark.parametrize("call,key", [
    (lambda: jaxq.analyze(), "system"),
    (lambda: jaxq.optimal("pss_P"), "n"),
    (lambda: jaxq.analyze("pss_P", 1, 2), "arguments"),
    (lambda: jaxq.simulate("pss_P", 4, 8, 9), "arguments"),
    (lambda: jaxq.example_names(kind="x"), "kind"),
    (lambda: jaxq.simulate('[system]\nkind = "pss2x2"\n', n=4, reps=2), "system"),
    (lambda: jaxq.load('[system]\nkind = "pss2x2"\n'), "source"),
])
def test_misuse_is_one_input_error_naming_the_argument(call, key):
    with pytest.raises(jaxq.InputError) as e:
        call()
    assert e.value.key == key
    assert "\n" not in str(e.value)
