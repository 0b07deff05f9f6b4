"""One module per action kind (see :mod:`pulsar_ops.repair.kind`); :mod:`pulsar_ops.repair.registry` lists them."""
