"""Layer 6: what a trained run does afterwards: text generation with a cache
(``generate``) and export of a softmax run as transformers' ``LlamaForCausalLM``
(``export_hf``). It reads run directories through ``training``."""
