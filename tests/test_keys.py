"""The keys a fit makes on the host (``bayes_dpreg.runtime.keys``) are JAX's own, bit for bit."""

import jax
import numpy as np
import pytest

from bayes_dpreg.runtime.keys import fold_in, seed_key, split_keys


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31, 2**32 - 1, 2**32, 2**40 + 5, 2**63 - 1, -1, -3, -(2**63)])
def test_seed_key_is_jax_random_key(seed):
    with jax.enable_x64(True):
        assert np.array_equal(jax.random.key_data(seed_key(seed)), jax.random.key_data(jax.random.key(seed)))
        assert jax.random.key_impl(seed_key(seed)) == jax.random.key_impl(jax.random.key(seed))


def test_seed_key_leaves_other_seeds_to_jax():
    with jax.enable_x64(True):
        assert np.array_equal(jax.random.key_data(seed_key(np.int64(5))), jax.random.key_data(jax.random.key(5)))
        for bad in (1.5, "3"):
            with pytest.raises(TypeError):
                jax.random.key(bad)  # JAX refuses it: so must seed_key
            with pytest.raises(TypeError):
                seed_key(bad)


def test_seed_key_without_64_bit_integers_is_jax_random_key():
    with jax.enable_x64(False):
        for seed in (0, 5, 2**31 - 1):
            assert np.array_equal(jax.random.key_data(seed_key(seed)), jax.random.key_data(jax.random.key(seed)))


@pytest.mark.parametrize("num", [1, 2, 4, 7])
def test_split_and_fold_in_are_jax_random_split_and_fold_in(num):
    key = jax.random.key(11)
    expected = jax.random.key_data(jax.random.split(key, num))
    assert np.array_equal(np.stack([jax.random.key_data(k) for k in split_keys(key, num)]), expected)
    assert np.array_equal(jax.random.key_data(split_keys(key, num, stacked=True)), expected)
    keys = jax.random.split(key, num)
    for i in (0, 3, 1_000_000):
        want = jax.random.key_data(jax.vmap(lambda k, i=i: jax.random.fold_in(k, i))(keys))
        assert np.array_equal(jax.random.key_data(fold_in(keys, np.uint32(i))), want)
        assert np.array_equal(jax.random.key_data(fold_in(key, np.uint32(i))), jax.random.key_data(jax.random.fold_in(key, i)))


def test_legacy_keys_go_through_jax():
    key = jax.random.PRNGKey(3)
    assert np.array_equal(np.stack(split_keys(key, 3)), jax.random.split(key, 3))
