"""configuration_vrl.py: the Hugging Face config of a vrl run folder whose variant is not the baseline.

A vrl run folder's config.json holds transformers' LlamaConfig keys plus `vrl_variant`. For the
baseline it says model_type "llama" and loads as LlamaForCausalLM; for every other variant vrl
writes model_type "vrl" and an auto_map naming these files (copied into the folder at run start),
so AutoConfig / AutoModelForCausalLM with trust_remote_code=True build VrlConfig /
VrlForCausalLM, and a plain LlamaForCausalLM is told the model type differs.
"""
from transformers import LlamaConfig


class VrlConfig(LlamaConfig):
    model_type = "vrl"

    def __init__(self, vrl_variant="baseline", **kwargs):
        self.vrl_variant = vrl_variant
        super().__init__(**kwargs)
