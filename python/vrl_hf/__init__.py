"""vrl_hf: vrl's value-path (formulas.md §4) and residual-stream (formulas.md §5) variants as a transformers model.

configuration_vrl.VrlConfig and modeling_vrl.VrlForCausalLM are the classes a vrl run folder's
config.json names in its auto_map; conformance/golden/make_golden.py builds its fixtures from the
same definitions in modeling_vrl.py.
"""
from .configuration_vrl import VrlConfig
from .modeling_vrl import VrlForCausalLM, set_precision

__all__ = ["VrlConfig", "VrlForCausalLM", "set_precision"]
