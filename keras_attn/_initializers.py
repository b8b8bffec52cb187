"""One initializer instance per weight."""


def fresh(initializer, index=0):
    """A new instance of `initializer`, to initialise one more weight.

    Keras initializers are stateless: one instance called twice returns the same
    values (an unseeded one draws its seed once, when it is made), so weights that
    share an instance start equal, e.g. a layer's query, key and value kernels.
    An unseeded initializer's clone draws a seed of its own; a seeded one's clone
    gets the seed plus `index`, so a user's seed still fixes every weight while
    the weights differ from each other.

    Args:
        initializer: a Keras initializer instance.
        index: the weight's number among those that share `initializer`.
    """
    config = initializer.get_config()
    seed = config.get("seed")
    if isinstance(seed, int):
        config["seed"] = seed + index
    return initializer.__class__.from_config(config)
